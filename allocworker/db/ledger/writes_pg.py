"""PostgreSQL: every write of an allocation transaction in one statement.

``allocations.write_set`` runs this on PostgreSQL instead of its sequence
of statements. Each sub-statement is a data-modifying CTE over whole
columns bound as arrays and ``unnest``-ed, so the text is the same for one
row or a thousand: it is written once per process, sent with
``exec_driver_sql`` (no SQLAlchemy compile step, no per-row parameter
processing), prepared once per connection (``prepared``).

PostgreSQL's rules for data-modifying CTEs shape it: every sub-statement
sees the snapshot the statement started with (none sees another's changes
except through RETURNING), and no row may be modified twice. So:

- new consumers take their first generation from retired_generations in
  their own INSERT (the rule of ``generations.first``: above the uuid's
  own retired generation and the ``*`` floor, never below 1); no consumer
  is created and emptied in one transaction, so the retiring upsert never
  touches a row this INSERT reads;
- new allocation rows name their consumer by uuid and find its id in the
  RETURNING of the consumer INSERT or of the compare-and-swap UPDATE;
- the old rows of a consumer are deleted before its new rows go in (the
  INSERT reads ``replaced``'s row count, which makes the DELETE finish
  first), because both may carry the same (consumer, provider, class)
  and the unique index must find the old one already deleted;
- foreign keys are checked at the end of the statement, so allocations
  may name a consumer inserted beside them, and a consumer may be
  deleted beside its allocations;
- the compare-and-swap UPDATEs return their rows, and the final SELECT
  counts them: Python checks that exactly the expected rows moved.
"""

from allocworker.db import prepared

# The usage counters moved by a write (its own statement in
# ``move_usage``).
_COUNTED = """
    INSERT INTO usages (provider_id, resource_class_id, used, free)
    SELECT c.provider_id, c.class_id, c.delta, -c.delta
    FROM unnest(%(c_provider)s::int[], %(c_class)s::int[],
                %(c_delta)s::bigint[]) AS c(provider_id, class_id, delta)
    ON CONFLICT (provider_id, resource_class_id)
    DO UPDATE SET used = usages.used + excluded.used,
                  free = usages.free - excluded.used"""

_WRITE_SET = """
WITH
replaced AS (
    DELETE FROM allocations WHERE consumer_id = ANY(%(replaced)s::int[])
    RETURNING 1),
updated AS (
    UPDATE consumers AS c
    SET generation = c.generation + 1, updated_at = %(now)s::timestamp,
        project_id = u.project_id, user_id = u.user_id,
        consumer_type = u.consumer_type
    FROM unnest(%(u_id)s::int[], %(u_generation)s::bigint[],
                %(u_project)s::text[], %(u_user)s::text[],
                %(u_type)s::text[])
         AS u(id, generation, project_id, user_id, consumer_type)
    WHERE c.id = ANY(%(u_id)s::int[])
      AND c.id = u.id AND c.generation = u.generation
    RETURNING c.uuid, c.id),
created AS (
    INSERT INTO consumers (uuid, project_id, user_id, consumer_type,
                           generation, created_at)
    SELECT n.uuid, n.project_id, n.user_id, n.consumer_type,
           GREATEST(1, COALESCE((
               SELECT max(r.generation) FROM retired_generations AS r
               WHERE r.kind = 'consumer' AND r.uuid IN (n.uuid, '*')),
               -1) + 1),
           %(now)s::timestamp
    FROM unnest(%(n_uuid)s::text[], %(n_project)s::text[],
                %(n_user)s::text[], %(n_type)s::text[])
         AS n(uuid, project_id, user_id, consumer_type)
    RETURNING uuid, id, generation),
held AS (
    SELECT uuid, id FROM updated UNION ALL SELECT uuid, id FROM created),
inserted AS (
    INSERT INTO allocations (consumer_id, provider_id, resource_class_id,
                             used, created_at)
    SELECT held.id, a.provider_id, a.resource_class_id, a.used,
           %(now)s::timestamp
    FROM unnest(%(a_uuid)s::text[], %(a_provider)s::int[],
                %(a_class)s::int[], %(a_used)s::bigint[])
         AS a(uuid, provider_id, resource_class_id, used)
    JOIN held ON held.uuid = a.uuid
    WHERE (SELECT count(*) FROM replaced) >= 0),
emptied AS (
    DELETE FROM consumers WHERE id = ANY(%(e_id)s::int[])),
retired AS (
    INSERT INTO retired_generations (kind, uuid, generation)
    SELECT 'consumer', e.uuid, e.generation
    FROM unnest(%(e_uuid)s::text[], %(e_generation)s::bigint[])
         AS e(uuid, generation)
    ON CONFLICT (kind, uuid) DO UPDATE SET generation = excluded.generation),
counted AS (""" + _COUNTED + """),
projected AS (
    INSERT INTO project_usages (project_id, consumer_type,
                                resource_class_id, used, shard)
    SELECT *, %(shard)s::smallint
    FROM unnest(%(pu_project)s::text[], %(pu_type)s::text[],
                %(pu_class)s::int[], %(pu_delta)s::bigint[])
    ON CONFLICT (project_id, consumer_type, resource_class_id, shard)
    DO UPDATE SET used = project_usages.used + excluded.used),
peopled AS (
    INSERT INTO project_consumers (project_id, consumer_type, consumers,
                                   shard)
    SELECT *, %(shard)s::smallint
    FROM unnest(%(pc_project)s::text[], %(pc_type)s::text[],
                %(pc_delta)s::bigint[])
    ON CONFLICT (project_id, consumer_type, shard)
    DO UPDATE SET consumers = project_consumers.consumers
                              + excluded.consumers),
locked_counts AS (
    UPDATE project_locks AS l SET counts = k.counts
    FROM unnest(%(l_project)s::text[], %(l_counts)s::text[])
         AS k(project_id, counts)
    WHERE l.project_id = k.project_id),
released AS (
    UPDATE events SET held_until = NULL
    WHERE consumer_uuid = ANY(%(n_uuid)s::text[])
      AND held_until >= %(now)s::timestamp),
bumped AS (
    UPDATE providers AS p
    SET generation = p.generation + 1, updated_at = %(now)s::timestamp
    FROM unnest(%(b_id)s::int[], %(b_generation)s::bigint[])
         AS b(id, generation)
    WHERE p.id = ANY(%(b_id)s::int[])
      AND p.id = b.id AND p.generation = b.generation
    RETURNING p.id)
SELECT uuid, id, generation FROM created
UNION ALL
SELECT NULL, (SELECT count(*) FROM updated), (SELECT count(*) FROM bumped)
"""


# Planning this statement costs the server more than running it (about
# 0.7 ms against 0.35 ms for one new consumer), so it is prepared once per
# connection (``prepared``).
_STATEMENT = prepared.Statement('allocworker_write_set', _WRITE_SET)


def write_set(conn, writes, now, shard, counts):
    """Run ``writes`` (an ``allocations.WriteSet``) in one statement,
    the project shard counters on rows ``shard``, ``counts`` [(project,
    counts)] in the project lock rows.

    (created {uuid: (id, generation)}, consumers moved, providers moved).
    """
    params = {'now': now, 'replaced': sorted(writes.replaced),
              'shard': shard}
    # Each kind of row is bound column by column, as the arrays the
    # statement unnests (None: a field the statement does not read).
    _bind(params, writes.updated,
          (None, 'u_id', 'u_generation', 'u_project', 'u_user', 'u_type'))
    _bind(params, writes.created, ('n_uuid', 'n_project', 'n_user', 'n_type'))
    _bind(params, writes.rows, ('a_uuid', 'a_provider', 'a_class', 'a_used'))
    _bind(params, [(c.id, c.uuid, c.generation) for c in writes.emptied],
          ('e_id', 'e_uuid', 'e_generation'))
    _bind(params, [(pid, cid, delta) for (pid, cid), delta
                   in sorted(writes.usage.items())],
          ('c_provider', 'c_class', 'c_delta'))
    _bind(params, sorted(writes.bumps.items()), ('b_id', 'b_generation'))
    # Project counters in key order: writers that share a counter row
    # lock it in one order (project, type, class).
    _bind(params, [key + (d,) for key, d
                   in sorted(writes.project_usage.items())],
          ('pu_project', 'pu_type', 'pu_class', 'pu_delta'))
    _bind(params, [key + (d,) for key, d
                   in sorted(writes.project_consumers.items())],
          ('pc_project', 'pc_type', 'pc_delta'))
    _bind(params, counts, ('l_project', 'l_counts'))
    found = {}
    moved = (0, 0)
    for uuid, row_id, generation in _STATEMENT.execute(conn, params):
        if uuid is None:
            moved = (row_id, generation)
        else:
            found[uuid] = (row_id, generation)
    return found, moved[0], moved[1]


_USAGE = prepared.Statement('allocworker_usage', _COUNTED)


def move_usage(conn, usage):
    """The ``counted`` part of the write set alone, in one statement:
    {(provider_id, class_id): delta}."""
    params = {}
    _bind(params, [(pid, cid, delta) for (pid, cid), delta
                   in sorted(usage.items())],
          ('c_provider', 'c_class', 'c_delta'))
    _USAGE.execute(conn, params)


def _bind(params, rows, names):
    """Add ``rows`` (tuples) to ``params`` as one list per named field."""
    columns = list(zip(*rows)) if rows else [()] * len(names)
    for name, column in zip(names, columns):
        if name is not None:
            params[name] = list(column)
