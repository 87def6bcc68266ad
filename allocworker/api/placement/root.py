"""``GET /``: the API's one version and its microversion range."""

from allocworker.api.placement import http


def versions(_request):
    low, high = http.MIN_VERSION, http.MAX_VERSION
    return http.Response(body={'versions': [{
        'id': 'v1.0', 'status': 'CURRENT',
        'min_version': '%d.%d' % low, 'max_version': '%d.%d' % high,
        'links': [{'rel': 'self', 'href': ''}]}]}, cacheable=True)
