"""Provisioning: what a sandbox starts from, prepared once and cached by content. Snapshots and work
copies (``workcopy``), set-up steps (``setup_steps``), Python environments and their dependency
layers (``pyenv``, ``requirements``), Node.js environments (``nodeenv``), Docker images
(``images``) and the cache's inventory and pruning (``cache``). The sandboxes in ``sandbox/`` run
commands over what this package prepares."""
