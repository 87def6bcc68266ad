"""Consumer groups, their members, and the failure domains their rules
count in (topology levels, partitions as a level)."""
