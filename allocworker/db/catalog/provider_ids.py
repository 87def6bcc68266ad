"""Provider ids by uuid, remembered by this process: a write names its
providers by uuid and locks them by id."""

from allocworker.db import api
from allocworker.db.catalog import providers


# uuid -> id of providers seen by this process, per database. A provider
# deleted and created again gets a new id, so a remembered id is only a
# guess: whoever uses one checks the uuid on the row it locks
# (``forget`` the guess and start over when it differs).
_remembered = {}
_REMEMBER_AT_MOST = 100000


def remembered_ids(conn, uuids):
    """{uuid: id} for those of ``uuids`` that exist, from memory where
    possible (verify under the lock, see above)."""
    known = _remembered.setdefault(api.database_key(conn), {})
    found = {u: known[u] for u in uuids if u in known}
    missing = [u for u in uuids if u not in found]
    if missing:
        fresh = providers.ids_by_uuid(conn, missing)
        remember(conn, fresh)
        found.update(fresh)
    return found


def remember(conn, ids):
    """Remember {uuid: id} read by a query of its own (a claim's window
    of trees), as guesses like any other."""
    known = _remembered.setdefault(api.database_key(conn), {})
    if len(known) + len(ids) > _REMEMBER_AT_MOST:
        known.clear()
    known.update(ids)


def forget(conn, uuids):
    known = _remembered.get(api.database_key(conn), {})
    for uuid in uuids:
        known.pop(uuid, None)
