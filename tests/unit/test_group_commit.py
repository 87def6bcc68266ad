"""The combiner behind shared transactions: who runs with whom."""

import threading

from allocworker.allocations import group_commit


class Recorder(object):
    """A run that records its batches; the first run blocks until
    released, so that calls queue behind it."""

    def __init__(self, fail_on=None):
        self.batches = []
        self.first_started = threading.Event()
        self.release = threading.Event()
        self.fail_on = fail_on

    def __call__(self, works):
        self.batches.append(list(works))
        if len(self.batches) == 1:
            self.first_started.set()
            assert self.release.wait(10)
        if self.fail_on in works:
            raise RuntimeError('run failed')
        return ['done-%s' % w for w in works]


def _submit_all(combiner, calls):
    """Submit (work, size, keys) calls from threads; {work: result}."""
    results = {}

    def submit(work, size, keys):
        try:
            results[work] = combiner.submit(work, size, keys)
        except RuntimeError as exc:
            results[work] = exc

    threads = [threading.Thread(target=submit, args=call) for call in calls]
    for t in threads:
        t.start()
    return threads, results


def _queued(combiner, count):
    for _ in range(1000):
        with combiner._lock:
            if len(combiner._queue) >= count:
                return
        threading.Event().wait(0.005)
    raise AssertionError('calls did not queue')


def test_a_call_alone_runs_at_once():
    run = Recorder()
    run.release.set()
    combiner = group_commit.Combiner(run, lambda: 10)
    assert combiner.submit('a') == 'done-a'
    assert run.batches == [['a']]


def test_calls_queued_during_a_run_share_the_next_in_order():
    run = Recorder()
    combiner = group_commit.Combiner(run, lambda: 10)
    first, results = _submit_all(combiner, [('a', 1, ())])
    assert run.first_started.wait(10)
    later, more = _submit_all(combiner, [(w, 1, ()) for w in 'bcd'])
    _queued(combiner, 3)
    run.release.set()
    for t in first + later:
        t.join(10)
    assert run.batches[0] == ['a']
    assert sorted(run.batches[1]) == ['b', 'c', 'd']
    assert len(run.batches) == 2
    assert results['a'] == 'done-a'
    assert more == {w: 'done-%s' % w for w in 'bcd'}


def test_calls_sharing_a_key_never_share_a_run():
    run = Recorder()
    combiner = group_commit.Combiner(run, lambda: 10)
    first, _ = _submit_all(combiner, [('a', 1, ())])
    assert run.first_started.wait(10)
    later, results = _submit_all(combiner, [
        ('b', 1, ('consumer-1',)), ('c', 1, ('consumer-1',)),
        ('d', 1, ('consumer-2',))])
    _queued(combiner, 3)
    run.release.set()
    for t in first + later:
        t.join(10)
    for batch in run.batches:
        assert not {'b', 'c'} <= set(batch), run.batches
    assert results == {w: 'done-%s' % w for w in 'bcd'}


def test_a_run_takes_at_most_the_limit_and_never_splits_a_call():
    run = Recorder()
    combiner = group_commit.Combiner(run, lambda: 5)
    first, _ = _submit_all(combiner, [('a', 1, ())])
    assert run.first_started.wait(10)
    later, results = _submit_all(combiner, [
        ('b', 3, ()), ('c', 3, ()), ('big', 9, ())])
    _queued(combiner, 3)
    run.release.set()
    for t in first + later:
        t.join(10)
    sizes = {'a': 1, 'b': 3, 'c': 3, 'big': 9}
    for batch in run.batches:
        assert len(batch) == 1 or sum(sizes[w] for w in batch) <= 5
    assert sorted(w for b in run.batches for w in b) == [
        'a', 'b', 'big', 'c']
    assert results == {w: 'done-%s' % w for w in ('b', 'c', 'big')}


def test_a_failed_run_fails_only_its_calls():
    run = Recorder(fail_on='b')
    combiner = group_commit.Combiner(run, lambda: 10)
    first, results = _submit_all(combiner, [('a', 1, ())])
    assert run.first_started.wait(10)
    later, more = _submit_all(combiner, [('b', 1, ('k',)),
                                         ('c', 1, ('k',))])
    _queued(combiner, 2)
    run.release.set()
    for t in first + later:
        t.join(10)
    assert results['a'] == 'done-a'
    assert isinstance(more['b'], RuntimeError)
    # c shared a key with b, so ran after it, and b's failure is not its.
    assert more['c'] == 'done-c'
    # The combiner is idle again and serves the next call at once.
    assert combiner.submit('e') == 'done-e'


class GivesBack(Recorder):
    """A run that gives back (``AGAIN``) the works of ``back`` the first
    time it meets each."""

    def __init__(self, back):
        super().__init__()
        self.back, self.given_back = set(back), set()

    def __call__(self, works):
        done = super().__call__(works)
        again = self.back & set(works) - self.given_back
        self.given_back |= again
        return [group_commit.AGAIN if w in again else d
                for w, d in zip(works, done)]


def test_a_call_given_back_leads_the_next_run_and_is_answered_there():
    run = GivesBack(back={'b'})
    combiner = group_commit.Combiner(run, lambda: 10)
    first, results = _submit_all(combiner, [('a', 1, ())])
    assert run.first_started.wait(10)
    later, more = _submit_all(combiner, [('b', 1, ()), ('c', 1, ())])
    _queued(combiner, 2)
    run.release.set()
    for t in first + later:
        t.join(10)
    assert run.batches[0] == ['a']
    assert sorted(run.batches[1]) == ['b', 'c']
    # Given back, b went to the head of the queue and ran again.
    assert run.batches[2][0] == 'b'
    assert more == {'b': 'done-b', 'c': 'done-c'}
    assert results == {'a': 'done-a'}
    assert combiner.submit('e') == 'done-e'


def test_a_call_alone_given_back_runs_again_at_once():
    run = GivesBack(back={'a'})
    run.release.set()
    combiner = group_commit.Combiner(run, lambda: 10)
    assert combiner.submit('a') == 'done-a'
    assert run.batches == [['a'], ['a']]
