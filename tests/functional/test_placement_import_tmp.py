"""``placement import`` from a MariaDB Placement database without any
internal temporary table on disk. At 10,000 providers and 100,000
consumers the import failed on MariaDB with ``Error on delete of
'/tmp/#sql-temptable-...MAI' (Errcode: 2)``: each page of consumers was
read with a join that MariaDB sorted through an internal temporary
table of every consumer left, spilled to an Aria file in its tmpdir,
and any mariadbd that starts with the same tmpdir (a Galera node of the
fault tests, ``mariadb-install-db``) deletes every ``#sql*`` file there.

The same shape shows at small size: with the source's sessions allowed
1 MiB of in-memory temporary table and 1 KiB on disk (set through the
URL's ``init_command``), any read whose temporary table grows with the
cloud fails with "The table '(temporary)' is full". 2,000 consumers in
100 projects make MariaDB drive that join from the projects, as at
size; the reads of a page of consumers must stay within the page."""

import json
import os

import sqlalchemy as sa

from benchmarks import placement_import as bench
from tests.functional import services

BACKENDS = ('mysql',)

TIGHT = ('SET SESSION max_heap_table_size = 1048576, '
         'tmp_table_size = 1048576, tmp_disk_table_size = 1024')


def _tight(url):
    """``url`` whose sessions keep no internal temporary table over 1 MiB
    (memory) and 1 KiB (disk): a bigger one fails the statement."""
    return sa.engine.make_url(url).update_query_dict(
        {'init_command': TIGHT}).render_as_string(hide_password=False)


def _manage(config, *args):
    return json.loads(services.manage(config, 'placement', 'import',
                                      '--format', 'json', *args).stdout)


def test_import_and_catch_up_without_temporary_tables_on_disk(
        database, scratch):
    config = services.write_config(os.path.join(scratch, 'aw.conf'),
                                   database, 'unused')
    with services.fresh_database('mysql', scratch) as source:
        bench.placement_schema(source, scratch)
        _rp, consumers, where = bench.fill(source, 20, 2000)
        url = _tight(source)
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT @@tmp_disk_table_size').scalar() == 1024
        engine.dispose()
        first = _manage(config, '--from-connection', url)
        assert (first['counts']['consumers'],
                first['counts']['allocations']) == (2000, 4000)
        assert first['audit']['clean']
        changes = bench.change(source, consumers, where, 20, 0.05)
        assert changes == {'moved': 50, 'deleted': 25, 'new': 25}
        later = _manage(config, '--catch-up', '--overlap-seconds', '0',
                        '--from-connection', url)
        counts = later['counts']
        assert (counts['consumers'], counts['consumers_removed']) == (75, 25)
        assert later['audit']['clean']
