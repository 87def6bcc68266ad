"""One claim placed in its transaction (``claims`` steps 2 to 4): its
release judged in a savepoint, the roots its groups leave it, then the
candidates of one window at a time tried in the strategy's order."""

from allocworker.allocations import writes
from allocworker import codes
from allocworker.scheduling import claim_groups
from allocworker.scheduling import claim_tries
from allocworker.scheduling import lookup


def place(conn, context, claim, known, searches, staging):
    """(answer, notification payloads) of the first candidate that fits,
    or the claim's Fault: the candidates of the window an earlier item
    of the call asking the same placed from (``reuse``), then of one
    window of roots at a time, the next only when nothing in this one
    fitted, then the candidates passed over for last. ``staging``: where
    the write is held back, or None to write it now. A claim into
    groups searches first the roots their hard rules leave it, when
    they are few (``claim_groups.prepared``), and the whole scope only
    if nothing fits there, so that it says why."""
    # Only a new consumer's search is kept for the claims after it.
    searches = searches if is_new(claim, known) else None
    known, roots = claim_groups.prepared(conn, claim, known,
                                         claim_tries.NEW_TYPE)
    outcome = _from_kept(conn, context, claim, known, searches, staging)
    if outcome is not None:
        return outcome
    outcome = _walk(conn, context, claim, known, searches, staging, roots)
    if roots is not None and isinstance(outcome, codes.Fault) and \
            outcome.code in (codes.CAPACITY_EXCEEDED,
                             codes.GROUP_POLICY_VIOLATION):
        outcome = _walk(conn, context, claim, known, searches, staging)
    return outcome


def _walk(conn, context, claim, known, searches, staging, roots=None):
    """``_place``'s search and tries within ``roots`` (None: the whole
    scope of the request)."""
    answered, windows = _search(conn, context, claim, known, roots)
    if isinstance(answered, codes.Fault):
        return answered
    if answered is not None:
        return answered, []
    tally = _Tally()
    outcome = _through_windows(conn, context, claim, known, searches,
                               staging, windows, tally)
    if outcome is None:
        outcome = _through_last(conn, context, claim, known, staging, tally)
    return outcome if outcome is not None else tally.refusal(claim.request)


class _Tally(object):
    """What a claim met in its windows, for its refusal if nothing fits:
    candidates found and excluded, the faults of those tried, the group
    that ruled candidates out, and the candidates left for last."""

    def __init__(self):
        self.found = self.excluded = 0
        self.faults, self.blocking, self.last = [], None, []

    def refusal(self, request):
        if self.blocking is not None and not self.faults:
            return claim_groups.ruled_out(request, self.blocking,
                                          self.found - self.excluded)
        if self.faults and all(f.code == codes.GROUP_POLICY_VIOLATION
                               for f in self.faults):
            return self.faults[-1]
        return codes.Fault(
            codes.CAPACITY_EXCEEDED,
            'items[%d]: nothing fits the request: %d candidate(s) found, '
            '%d on excluded roots, %d tried and full when locked'
            % (request.index, self.found, self.excluded, len(self.faults)))


def _from_kept(conn, context, claim, known, searches, staging):
    """The outcome of the candidates an earlier claim of the transaction
    asking the same kept (``reuse``), or None to search afresh. Never
    waiting for a lock: a fresh search is cheaper than a wait for
    another transaction's whole batch."""
    kept = searches.window(claim) if searches is not None else None
    if kept is None:
        return None
    outcome, _refused, _blocked, _stale = claim_tries.place_in(
        conn, context, claim, _not_excluded(claim, kept[0]), kept[1],
        known, staging, passes=1)
    if outcome is not None and not isinstance(outcome, codes.Fault):
        searches.placed(claim, outcome[0])
    return outcome


def _through_windows(conn, context, claim, known, searches, staging,
                     windows, tally):
    """The outcome of the first window with a candidate that fits (or a
    Fault that ends the claim), or None, ``tally`` filled in; the window
    kept in ``searches`` (unless None) for the claims after it."""
    for window in windows:
        if isinstance(window, codes.Fault):
            return window
        candidates, ids = window
        kept = _not_excluded(claim, candidates)
        tally.found += len(candidates)
        tally.excluded += len(candidates) - len(kept)
        outcome, refused, blocked, passed = claim_tries.place_in(
            conn, context, claim, kept, ids, known, staging)
        if outcome is not None:
            if searches is not None and not isinstance(outcome,
                                                       codes.Fault):
                searches.keep(claim, window, outcome[0])
            return outcome
        tally.faults.extend(refused)
        tally.blocking = tally.blocking or blocked
        if passed:
            tally.last.append((passed, ids))
    return None


def _through_last(conn, context, claim, known, staging, tally):
    """A spread claim's trees placed in since it weighed them, or held by
    another writer (most likely placing there), tried after every other
    window: it doubles up on a host only when nothing emptier fits, and
    never fails while one of them fits."""
    for passed, ids in tally.last:
        outcome, refused, _blocked, _passed = claim_tries.place_in(
            conn, context, claim, passed, ids, known, staging,
            fresh=False)
        if outcome is not None:
            return outcome
        tally.faults.extend(refused)
    return None


def _search(conn, context, claim, known, roots=None):
    """(Fault, None) when allocate's rules refuse the consumer, (answer,
    None) for a repeat of an answered idempotency key, else (None, the
    windows of candidates, within ``roots`` unless None), each window
    searched as if the consumer's allocations were released."""
    if is_new(claim, known):
        missing = claim_groups.missing_group(claim.request, known)
        if missing is not None:
            return missing, None
        return None, _windows(conn, context, claim, None, roots)
    savepoint = conn.begin_nested()
    held = known._replace(providers={})
    try:
        released, _changes = writes.write_in(conn, context, [claim.request],
                                             claim_tries.NEW_TYPE, held)
    except writes.BatchFailed as failed:
        savepoint.rollback()
        return failed.faults[claim.request.index], None
    savepoint.rollback()
    answer = released[claim.request.index]
    if 'root_uuid' in answer or answer['status'] != 200:
        # Replayed: claims remember where they placed (``claim_tries``),
        # and a refusal stays one (``refusals``).
        return answer, None
    return None, _windows(conn, context, claim, held, roots)


def is_new(claim, known):
    """A new consumer, as its item says, with nothing to release or
    replay: nothing for a release to judge (a group it joins is only
    looked up, ``claim_groups.missing_group``)."""
    request = claim.request
    return request.consumer_uuid not in known.consumers and not any((
        request.generation is not None, request.idempotency_key))


def _not_excluded(claim, candidates):
    return [c for c in candidates
            if c['root_uuid'] not in claim.exclude_roots]


def _windows(conn, context, claim, release, roots=None):
    """The candidates of each window in turn (within ``roots`` unless
    None), each read with the consumer's own allocations released (a
    resize may land where it is) in a savepoint rolled back before any
    is tried (``release``, the rows the release holds locked already,
    ``writes.Prelocked``; None for a new consumer); a Fault for an
    unknown class or trait."""
    source = lookup.windows(conn, claim.wanted, claim.strategy, roots)
    while True:
        savepoint = conn.begin_nested() if release else None
        try:
            if release:
                writes.write_in(conn, context, [claim.request],
                                claim_tries.NEW_TYPE, release)
            window = next(source, None)
        except codes.Fault as fault:
            window = codes.Fault(fault.code, 'items[%d].request: %s'
                                 % (claim.request.index, fault.detail))
        finally:
            if savepoint is not None:
                savepoint.rollback()
        if window is None:
            return
        yield window
        if isinstance(window, codes.Fault):
            return
