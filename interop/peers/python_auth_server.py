"""An MCP server behind the Python SDK's own OAuth authorization server (PyPI `mcp` 2.3.0,
`mcp.server.auth`), for the interop row python-oauth. What a row observes is the SDK's
behaviour: its routes, handlers, client authentication and bearer middleware. This file adds
only what the SDK leaves to the application: an in-memory provider whose /authorize approves
at once, and the options below.

    python python_auth_server.py [OPTIONS] PORT      (or PORT in the environment)

Streamable HTTP on 127.0.0.1:PORT/mcp; the issuer is http://127.0.0.1:PORT (metadata at
/.well-known/oauth-authorization-server, DCR at /register, /authorize, /token, /revoke);
Protected Resource Metadata at /.well-known/oauth-protected-resource/mcp.
Tools: echo(text) and fail(reason) (raises: the SDK answers isError: true).

Options:
  --token-lifetime SECONDS     access tokens' lifetime (default 3600; env TOKEN_LIFETIME)
  --advertise-auth-methods L   comma-separated token_endpoint_auth_methods_supported in the
                               metadata (the SDK always lists client_secret_post and
                               client_secret_basic; this serves the SDK's metadata handler
                               with the list replaced)
  --register-auth-method M     DCR registrations get M (none, client_secret_basic,
                               client_secret_post) whatever the client asked for (the SDK
                               grants what was asked, defaulting to client_secret_post; RFC
                               7591 lets a server substitute: the provider rewrites the record
                               the SDK then answers with)
  --no-revocation              no /revoke route (the SDK's RevocationOptions off)
  --machine-client ID:SECRET   a client known without registration, registered for the
                               client_credentials grant with client_secret_basic (the SDK's
                               token handler knows no such grant: it shows what it answers)

Revoking a token (the SDK's /revoke, RFC 7009) revokes it and its pair: the access token and
the refresh token issued with it, as the SDK's provider protocol says implementations SHOULD.
Every secret stays in memory; nothing is logged but a start line and the SDK's warnings on
stderr (no access log: a redirect's query holds the code).
"""

import argparse
import os
import secrets
import sys
import time

import uvicorn
from starlette.routing import Route

from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, cors_middleware
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from pydantic import BaseModel
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")


class InMemoryProvider:
    """An OAuthAuthorizationServerProvider holding clients, codes and tokens in dicts.
    /authorize approves at once: a code, then the redirect with code and state."""

    def __init__(self, token_lifetime: int, register_auth_method: str | None):
        self.token_lifetime = token_lifetime
        self.register_auth_method = register_auth_method
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        # access token -> refresh token issued with it, and back
        self.pairs: dict[str, str] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        forced = self.register_auth_method
        if forced is not None and forced != client_info.token_endpoint_auth_method:
            # The SDK answers with this very record, so the substitution is what the client
            # reads back (RFC 7591 3.2.1).
            client_info.token_endpoint_auth_method = forced
            if forced == "none":
                client_info.client_secret = None
                client_info.client_secret_expires_at = None
            elif client_info.client_secret is None:
                client_info.client_secret = secrets.token_hex(32)
                client_info.client_secret_expires_at = 0
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(32)
        refresh = secrets.token_urlsafe(32)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.token_lifetime,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        self.pairs[access] = refresh
        self.pairs[refresh] = access
        return OAuthToken(
            access_token=access,
            expires_in=self.token_lifetime,
            scope=" ".join(scopes) or None,
            refresh_token=refresh,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        # Refresh tokens rotate: the old pair is forgotten.
        self._revoke(refresh_token.token)
        return self._issue(client.client_id, scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    def _revoke(self, token: str) -> None:
        other = self.pairs.pop(token, None)
        if other is not None:
            self.pairs.pop(other, None)
        for value in (token, other):
            if value is not None:
                self.access.pop(value, None)
                self.refresh.pop(value, None)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self._revoke(token.token)

    async def exchange_identity_assertion(self, client, params):  # pragma: no cover - not offered
        from mcp.server.auth.provider import TokenError

        raise TokenError(error="unsupported_grant_type", error_description="not offered here")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", nargs="?", type=int, default=os.environ.get("PORT"))
    parser.add_argument("--token-lifetime", type=int, default=int(os.environ.get("TOKEN_LIFETIME", "3600")))
    parser.add_argument("--advertise-auth-methods")
    parser.add_argument("--register-auth-method", choices=AUTH_METHODS)
    parser.add_argument("--no-revocation", action="store_true")
    parser.add_argument("--machine-client")
    args = parser.parse_args()
    if args.port is None:
        parser.error("give the port as an argument or in PORT")
    args.port = int(args.port)
    return args


def main() -> None:
    args = parse_args()
    base = f"http://127.0.0.1:{args.port}"
    provider = InMemoryProvider(args.token_lifetime, args.register_auth_method)
    if args.machine_client:
        client_id, _, secret = args.machine_client.partition(":")
        provider.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=secret,
            client_secret_expires_at=0,
            token_endpoint_auth_method="client_secret_basic",
            grant_types=["client_credentials"],
            redirect_uris=[f"{base}/unused"],
        )
    registration = ClientRegistrationOptions(enabled=True)
    revocation = RevocationOptions(enabled=not args.no_revocation)
    server = MCPServer(
        name="interop-python-oauth",
        version="1.0.0",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=registration,
            revocation_options=revocation,
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def echo(text: str) -> str:
        """Returns its text."""
        return text

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails, with the reason as the tool's error text."""
        raise ToolError(f"failed on purpose: {reason}")

    # For the bridge's checks behind OAuth: a slow call, progress, an elicitation.
    @server.tool()
    async def sleep(seconds: float) -> str:
        """Answers after the given number of seconds."""
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Reports progress 1..steps of steps, 50 ms apart, then answers."""
        for step in range(1, steps + 1):
            await anyio.sleep(0.05)
            await ctx.report_progress(step, steps, f"step {step}")
        return f"counted {steps}"

    class Name(BaseModel):
        name: str

    def ask_name() -> Elicit[Name]:
        return Elicit("Who is there?", Name)

    @server.tool()
    async def knock(who: Annotated[Name, Resolve(ask_name)]) -> str:
        """Asks who is there (elicitation); greets them."""
        return f"Hello, {who.name}!"

    app = server.streamable_http_app()
    if args.advertise_auth_methods is not None:
        # The settings' issuer: AuthSettings keeps a path-less URL without the trailing slash
        # a bare AnyHttpUrl would add (the issuer is compared as a string).
        metadata = build_metadata(server.settings.auth.issuer_url, None, registration, revocation)
        metadata.token_endpoint_auth_methods_supported = [
            m for m in args.advertise_auth_methods.split(",") if m
        ]
        # Matched before the SDK's own metadata route.
        app.router.routes.insert(
            0,
            Route(
                "/.well-known/oauth-authorization-server",
                endpoint=cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"]),
                methods=["GET", "OPTIONS"],
            ),
        )
    print(f"python-oauth: serving {base}/mcp (issuer {base})", file=sys.stderr, flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
