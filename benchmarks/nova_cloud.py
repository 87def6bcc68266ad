"""The cloud ``nova_mix.py`` boots into, and the boots it asks for: flat
roots of three sizes in four zones of unequal size, some with a GPU
trait, some disabled, some full; Nova's request mix drawn over them.
Bulk-loaded into allocworker's or Placement 16's tables
(``candidates_cloud.BulkLoader``)."""

import os
import random
import uuid

import sqlalchemy as sa

from allocworker.db import schema
from benchmarks import candidates_cloud

ZONES = (0.50, 0.30, 0.15, 0.05)
GPU, DISABLED = 'CUSTOM_GPU', 'COMPUTE_STATUS_DISABLED'
# Shares of each zone's hosts (at least one host each, but full).
GPU_SHARE, DISABLED_SHARE, FULL_SHARE = 0.03, 0.02, 0.10
SIZES = ({'VCPU': 64, 'MEMORY_MB': 262144, 'DISK_GB': 4000},
         {'VCPU': 128, 'MEMORY_MB': 524288, 'DISK_GB': 8000},
         {'VCPU': 32, 'MEMORY_MB': 131072, 'DISK_GB': 2000})
FLAVORS = ({'VCPU': 1, 'MEMORY_MB': 2048, 'DISK_GB': 20},
           {'VCPU': 2, 'MEMORY_MB': 4096, 'DISK_GB': 40},
           {'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 80})
GPU_FLAVOR = {'VCPU': 4, 'MEMORY_MB': 16384, 'DISK_GB': 80}
ZONED, NEEDS_GPU, NAMES_HOST = 0.5, 0.1, 0.01
LIMIT, RETRIES = 1000, 3
OUT = os.path.join('benchmarks', 'results', 'nova_mix.json')


class Cloud(object):
    """Flat roots (provider id ``n + 1``), their zones and roles, and the
    request mix drawn on them."""

    def __init__(self, trees, seed=0):
        rng = random.Random(seed)
        self.uuids = [str(uuid.UUID(int=rng.getrandbits(128), version=4))
                      for _ in range(trees)]
        self.index = {u: n for n, u in enumerate(self.uuids)}
        order = rng.sample(range(trees), trees)
        bounds = [round(trees * sum(ZONES[:z + 1])) for z in range(4)]
        self.zone_of, self.zones = {}, []
        self.gpu, self.disabled, self.full = set(), set(), set()
        for z, (first, last) in enumerate(zip([0] + bounds, bounds)):
            hosts = order[first:last]
            self.zones.append(frozenset(self.uuids[n] for n in hosts))
            self.zone_of.update((n, z) for n in hosts)
            counts = [max(1, round(len(hosts) * GPU_SHARE)),
                      max(1, round(len(hosts) * DISABLED_SHARE)),
                      round(len(hosts) * FULL_SHARE)]
            for role, count in zip((self.gpu, self.disabled, self.full),
                                   counts):
                role.update(self.uuids[n] for n in hosts[:count])
                hosts = hosts[count:]
        self.eligible = {(z, gpu): sorted(
            (self.zones[z] if z is not None else frozenset(self.uuids)) &
            (self.gpu if gpu else frozenset(self.uuids)) - self.disabled -
            self.full) for z in (None, 0, 1, 2, 3) for gpu in (False, True)}

    def size(self, host):
        """A host's inventory totals (by its uuid)."""
        return dict(SIZES[self.index[host] % len(SIZES)])

    def rows(self):
        """(providers, inventories, members) as ``BulkLoader`` takes them
        (member aggregate ``z`` is zone z's)."""
        count = len(self.uuids)
        return ([(n + 1, u, 'cn-%d' % n, None, n + 1)
                 for n, u in enumerate(self.uuids)],
                [(n + 1, rc, total) for n in range(count)
                 for rc, total in SIZES[n % len(SIZES)].items()],
                [(n + 1, self.zone_of[n]) for n in range(count)])

    def draw(self, rng):
        """One boot of Nova's mix: (its request group, the test its host
        must pass, the shapes it counts under)."""
        gpu = rng.random() < NEEDS_GPU
        zone = rng.choices(range(4), ZONES)[0] \
            if rng.random() < ZONED else None
        group = {'resources': dict(GPU_FLAVOR if gpu else
                                   rng.choice(FLAVORS)),
                 'required': ['!' + DISABLED] + ([GPU] if gpu else [])}
        if zone is not None:
            group['member_of'] = [candidates_cloud.aggregate(zone)]
        host = None
        if rng.random() < NAMES_HOST and self.eligible[zone, gpu]:
            host = group['in_tree'] = rng.choice(self.eligible[zone, gpu])
        shapes = [name for name, on in (('zoned', zone is not None),
                                        ('gpu', gpu), ('in_tree', host))
                  if on]

        def admits(root):
            return (root not in self.disabled and root not in self.full and
                    (zone is None or root in self.zones[zone]) and
                    (not gpu or root in self.gpu) and host in (None, root))
        return group, admits, shapes


def load_cloud(cloud, url, placement):
    """The cloud's rows and traits into one side's fresh tables."""
    loader = candidates_cloud.BulkLoader(url, placement)
    try:
        if placement:
            # Placement keys aggregates by id in a table of their own
            # (allocworker's members carry the uuid itself).
            with loader.engine.begin() as conn:
                candidates_cloud._insert(
                    conn, loader.t['placement_aggregates'], [
                        {'id': z + 1, 'uuid': candidates_cloud.aggregate(z)}
                        for z in range(len(ZONES))])
        loader.load(cloud.rows())
        with loader.engine.begin() as conn:
            traits = loader.t['traits']
            held = loader.t['resource_provider_traits'] if placement \
                else schema.provider_traits
            candidates_cloud._insert(conn, traits, [{'name': GPU}])
            ids = dict(conn.execute(sa.select(
                traits.c.name, traits.c.id).where(
                    traits.c.name.in_([GPU, DISABLED]))).all())
            candidates_cloud._insert(conn, held, [
                {loader.provider_key: cloud.index[u] + 1,
                 'trait_id': ids[name]}
                for name, hosts in ((GPU, cloud.gpu),
                                    (DISABLED, cloud.disabled))
                for u in sorted(hosts)])
            conn.exec_driver_sql('ANALYZE')  # the traits came after load's
    finally:
        loader.close()
