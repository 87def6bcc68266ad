"""Driving a workload: threads calling one function for a while, and
what it came to (calls or items per second, p50 and p99 latency)."""

import threading
import time


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def load(fn, concurrency, seconds):
    """Run ``fn`` from ``concurrency`` threads for ``seconds``; returns
    (latencies in s, errors, elapsed s)."""
    latencies, errors = [], []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def loop():
        mine = []
        while time.monotonic() < stop:
            started = time.monotonic()
            try:
                fn()
            except Exception as exc:  # counted, shown, never hidden
                errors.append(repr(exc))
            mine.append(time.monotonic() - started)
        with lock:
            latencies.extend(mine)

    begun = time.monotonic()
    threads = [threading.Thread(target=loop) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors, time.monotonic() - begun


def summary(latencies, errors, elapsed, items_per_call=1):
    """(items per second, p50 ms, p99 ms, errors, items)."""
    items = len(latencies) * items_per_call
    return (items / elapsed, percentile(latencies, 0.5) * 1000,
            percentile(latencies, 0.99) * 1000, errors, items)


def drive(fn, concurrency, seconds, items_per_call=1):
    return summary(*load(fn, concurrency, seconds),
                   items_per_call=items_per_call)
