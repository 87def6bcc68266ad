"""Nova's names for what a project's limits count (design §3, "Project
limits"): ``class:<resource class>`` sums a project's allocations of that
class, ``servers`` counts its ``INSTANCE`` consumers. The books are read
under these names (``db/limits/quota.py``) and judged by them
(``quota/rule.py``); they sit below both.
"""

SERVERS = 'servers'
SERVERS_TYPE = 'INSTANCE'
CLASS_PREFIX = 'class:'
