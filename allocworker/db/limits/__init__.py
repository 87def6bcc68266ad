"""Project limits inside the transaction: project locks and usage counters."""
