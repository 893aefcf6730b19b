"""Episodes on a Ray cluster: joining Ray (``ray_start``), GRPO groups placed on nodes and driven from
here (``groups``: ``collect(..., executor="ray")``), snapshots, environments and images moved to the
nodes that lack them (``artifact_store``), an env whose sandbox lives on another node
(``remote_env``: ``EpisodeConfig(env_placement="ray")``) and task validation on Ray (``validate``)."""

from . import remote_env  # noqa: F401 - registers EpisodeConfig(env_placement="ray")
