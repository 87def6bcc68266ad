"""Where a consumer fits: allocation candidates from a granular request."""
