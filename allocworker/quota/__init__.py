"""Project limits (design §3 "Project limits", RPC 1.4): Keystone's
unified limits, judged inside the allocation transaction."""
