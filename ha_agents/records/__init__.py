"""What an episode leaves behind: the typed episode record (``episode_record``), the one
append-only JSONL writer (``log``), exports and text rendering (``export``) and the HTML page
(``viewer``)."""
