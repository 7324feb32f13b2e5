"""The simulated engine: an SGLang-compatible worker whose GPU is a timing model.

It takes a real SGLang worker's flags (`args`), speaks the sglang-router PD protocol
(`handover`, `server`) and batches continuously on one timer-driven loop (`scheduler`,
`timing`); `/server_info` reports `"simulated": true`.
"""
