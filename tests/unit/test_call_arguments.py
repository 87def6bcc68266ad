"""calls.answer: arguments that do not fit a call are a whole-request
400 every time; arguments that fit reach the call every time."""

from allocworker import calls


def test_bad_arguments_are_a_400_every_time():
    for _ in range(2):
        answer = calls.answer(None, 'allocate', {'items': [], 'bogus': 1})
        assert answer['status'] == 400
        assert answer['code'] == 'invalid_request'
        assert answer['detail'] == (
            "bad arguments: got an unexpected keyword argument 'bogus'")
    missing = calls.answer(None, 'allocate', {})
    assert missing['detail'] == (
        "bad arguments: missing a required argument: 'items'")


def test_fitting_arguments_reach_the_call_every_time():
    for _ in range(2):
        answer = calls.answer(None, 'allocate', {'items': 5, 'atomic': True})
        assert answer['status'] == 400
        assert answer['detail'] == 'items must be a list, not 5'
