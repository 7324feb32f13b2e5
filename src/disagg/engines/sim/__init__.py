"""The simulated engine: an SGLang-compatible worker whose GPU is a timing model.

It takes the flags a real `python -m sglang.launch_server` worker gets (see `args`),
speaks the sglang-router PD protocol (see `handover`, `server`), and batches
continuously on one timer-driven loop (see `scheduler`, `timing`). Results produced
with it are labelled simulated (`/server_info` reports `"simulated": true`).
"""
