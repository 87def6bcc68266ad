"""Who is calling: keystonemiddleware in production, or the development
"noauth2" scheme Placement uses in its own tests.

noauth2: ``x-auth-token: USER[:PROJECT]``; the user ``admin`` gets the
admin role, any other user only the roles in ``X-Roles``; no token is a
401. Either way the request reaches the application with keystone's
identity headers (``X-User-Id``, ``X-Project-Id``, ``X-Roles``).
"""

import json


def noauth2(app):
    def middleware(environ, start_response):
        token = environ.get('HTTP_X_AUTH_TOKEN')
        if not token:
            body = json.dumps({'error': {
                'code': 401, 'title': 'Unauthorized',
                'message': 'no x-auth-token header'}}).encode('utf-8')
            start_response('401 Unauthorized', [
                ('Content-Type', 'application/json'),
                ('Content-Length', str(len(body))),
                ('WWW-Authenticate', 'noauth2 realm="allocworker"')])
            return [body]
        user, _, project = token.partition(':')
        roles = [r.strip() for r in
                 environ.get('HTTP_X_ROLES', '').split(',') if r.strip()]
        if user == 'admin' and 'admin' not in roles:
            roles.append('admin')
        environ.update({
            'HTTP_X_USER_ID': user, 'HTTP_X_PROJECT_ID': project or user,
            'HTTP_X_ROLES': ','.join(roles),
            'HTTP_X_IDENTITY_STATUS': 'Confirmed'})
        return app(environ, start_response)
    return middleware


def keystone(app, conf):
    from keystonemiddleware import auth_token
    return auth_token.AuthProtocol(app, {'oslo_config_config': conf})
