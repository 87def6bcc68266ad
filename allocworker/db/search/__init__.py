"""Where a consumer fits: the roots a request admits, the room index,
candidate and supplier queries, request filters as SQL."""
