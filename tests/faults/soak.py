"""The soak run (not in CI): mixed load for a long time while worker
processes are killed at random, then the audit and the ledger.

    .venv/bin/python -m tests.faults.soak --minutes 30 [--kill-every 60]

Prints its figures: calls made, answered, retried, acknowledged items,
lost (must be 0), and the audit result.
"""

import argparse
import os
import random
import signal
import sys
import tempfile
import time
import uuid

from tests.faults.load import Load
from tests.functional import services


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--minutes', type=float, default=30)
    parser.add_argument('--kill-every', type=float, default=60,
                        help='seconds between SIGKILLs of a worker process')
    parser.add_argument('--workers', type=int, default=3)
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--mysql', action='store_true')
    args = parser.parse_args(argv)
    from oslo_config import cfg
    cfg.CONF([], project='allocworker-soak')
    backend = 'mysql' if args.mysql else 'postgresql'
    with tempfile.TemporaryDirectory() as scratch, \
            services.fresh_database(backend, scratch) as database:
        topic = 'aw-soak-%s' % uuid.uuid4().hex[:8]
        config = services.write_config(os.path.join(scratch, 'worker.conf'),
                                       database, topic, args.workers)
        services.manage(config, 'db', 'sync')
        client = services.BareClient(topic, timeout=30)
        worker = services.Worker(config).start(client)
        hosts = []
        for n in range(8):
            host = str(uuid.uuid4())
            gen = client.create_provider(uuid=host, name='soak-%d' % n)[
                'items'][0]['generation']
            client.set_inventories(provider_uuid=host,
                                   provider_generation=gen,
                                   inventories={'VCPU': {'total': 10 ** 8}})
            hosts.append(host)
        load = Load(client, hosts, clients=args.clients).start()
        deadline = time.time() + args.minutes * 60
        kills = 0
        while time.time() < deadline:
            time.sleep(min(args.kill_every, max(0, deadline - time.time())))
            children = worker.child_pids()
            if children and time.time() < deadline:
                os.kill(random.choice(children), signal.SIGKILL)
                kills += 1
        load.stop()
        lost = load.report('soak %.0f min, %d worker kills'
                           % (args.minutes, kills))
        audit = services.manage(config, 'audit', '--grace-seconds', '600',
                                check=False)
        print('audit: exit %d: %s' % (audit.returncode,
                                      audit.stdout.strip()[:500]))
        worker.stop()
    return 0 if not lost and audit.returncode == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
