"""Placement's query-string mini-languages: ``resources=VCPU:1,DISK_GB:2``,
``required=A,!B`` and ``member_of=in:agg1,agg2``."""

from allocworker.api.placement import http


def resources(text):
    wanted = {}
    for part in text.split(','):
        name, _, amount = part.partition(':')
        try:
            wanted[name.strip()] = int(amount)
        except ValueError:
            raise http.bad_request(
                'Badly formed resources parameter. Expected resources query '
                'string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. '
                'Got: %s.' % text)
    return wanted


def traits(request, values):
    """(required, forbidden) from every ``required`` parameter; ``!``
    forbids from 1.22."""
    allow_forbidden = request.at_least(22)
    form = 'HW_CPU_X86_VMX,!CUSTOM_MAGIC' if allow_forbidden \
        else 'HW_CPU_X86_VMX,CUSTOM_MAGIC'
    required, forbidden = set(), set()
    for text in values:
        names = [n.strip() for n in text.split(',')]
        for name in names:
            negated = name.startswith('!')
            bare = name[1:] if negated else name
            if not bare or (negated and not allow_forbidden):
                raise http.bad_request(
                    "Invalid query string parameters: Expected 'required' "
                    "parameter value of the form: %s. Got: %s"
                    % (form, text))
            (forbidden if negated else required).add(bare)
    return required, forbidden


def member_of(values):
    """A list of aggregate sets; each must be met."""
    groups = []
    for value in values:
        value = value[len('in:'):] if value.startswith('in:') else value
        groups.append({a for a in value.split(',') if a})
    return groups
