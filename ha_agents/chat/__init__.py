"""Chat rendering for token-faithful trajectories: incremental templates (``template``), the
template families written for this project (``families``), one face over tokenizer APIs
(``tokens``) and a small locally trained tokenizer for tests (``toy_tokenizer``)."""
