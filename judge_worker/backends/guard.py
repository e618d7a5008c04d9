"""The address guard of untrusted OpenAI-compatible endpoints (participants' models).

A participant gives a base URL; the worker must not become a way into the platform's own
network. :func:`check_url` refuses a URL whose host resolves to any address that is not a
public one (private, loopback, link-local, multicast, reserved, unspecified, shared, or an
IPv4-mapped / 6to4 / NAT64 / Teredo form of one). :class:`GuardedTransport` checks again at
every request and connects to the address it checked (the URL's host is replaced by the IP,
the ``Host`` header and the TLS server name keep the original name), so a DNS answer that
changes between the check and the connection (DNS rebinding) is caught.

Messages name the host and the reason, never the URL's query string or credentials.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_SCHEMES = frozenset({"http", "https"})
REFUSED_KINDS = "private, loopback and link-local addresses are refused"
# NAT64's well-known prefix: the last 32 bits are an IPv4 address.
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class AddressRefused(Exception):
    """The endpoint's URL or address is not one the worker may call."""


def _kind(ip: IPAddress) -> str | None:
    """Why this single address is not a public one (None: it is)."""
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private address"
    if ip.is_reserved:
        return "a reserved address"
    if not ip.is_global:
        return "not a public address"
    return None


def refusal(ip: IPAddress) -> str | None:
    """Why `ip` is refused (None: it is a public address), looking through the IPv6 forms
    that carry an IPv4 address (mapped ``::ffff:a.b.c.d``, 6to4 ``2002::/16``, NAT64
    ``64:ff9b::/96``, Teredo's client)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        embedded: list[tuple[str, ipaddress.IPv4Address]] = []
        if ip.ipv4_mapped is not None:
            embedded.append(("an IPv4-mapped form of", ip.ipv4_mapped))
        if ip.sixtofour is not None:
            embedded.append(("a 6to4 form of", ip.sixtofour))
        if ip in NAT64:
            embedded.append(("a NAT64 form of", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
        if ip.teredo is not None:
            embedded.append(("a Teredo form of", ip.teredo[1]))
        for form, v4 in embedded:
            why = _kind(v4)
            if why is not None:
                return f"{form} {v4}, {why}"
    return _kind(ip)


def _literal(host: str) -> IPAddress | None:
    """The address a host names literally (``[::1]`` or ``::1``, ``10.0.0.1``), else None."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.ip_address(bare.split("%", 1)[0])
    except ValueError:
        return None


def resolve(host: str, port: int | None) -> list[IPAddress]:
    """Every address `host` resolves to through ``socket.getaddrinfo``, in the resolver's order
    (a literal is its own address: no lookup); AddressRefused if it does not resolve."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise AddressRefused(f"the endpoint's host {host} could not be resolved") from exc
    addresses: list[IPAddress] = []
    for family, _type, _proto, _canon, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise AddressRefused(f"the endpoint's host {host} could not be resolved")
    return addresses


def checked_addresses(host: str, port: int | None, *, allow_private: bool) -> list[IPAddress]:
    """The addresses of `host`, all of them checked (refused if any one is not public, unless
    `allow_private`)."""
    addresses = resolve(host, port)
    if allow_private:
        return addresses
    for ip in addresses:
        why = refusal(ip)
        if why is None:
            continue
        if _literal(host) is not None:
            raise AddressRefused(f"the endpoint's host {host} is {why}; {REFUSED_KINDS}")
        raise AddressRefused(f"the endpoint's host {host} resolves to {ip}, {why}; {REFUSED_KINDS}")
    return addresses


def _check_parts(scheme: str, has_userinfo: bool, host: str) -> None:
    if scheme not in ALLOWED_SCHEMES:
        shown = scheme or "(none)"
        raise AddressRefused(
            f"the endpoint URL's scheme {shown} is refused; only http and https are allowed"
        )
    if has_userinfo:
        raise AddressRefused(
            "the endpoint URL carries a user name or password; credentials belong in the key "
            "field, not in the URL"
        )
    if not host:
        raise AddressRefused("the endpoint URL has no host")


def check_url(url: str, *, allow_private: bool = False) -> None:
    """Refuse (AddressRefused) a URL the worker may not call: a scheme other than http(s),
    credentials in the URL, no host, a host that does not resolve, or one that resolves to any
    non-public address (unless `allow_private`)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise AddressRefused("the endpoint URL is not a valid URL") from exc
    has_userinfo = "@" in parts.netloc
    _check_parts(parts.scheme.lower(), has_userinfo, parts.hostname or "")
    checked_addresses(parts.hostname or "", port, allow_private=allow_private)


class GuardedTransport(httpx.BaseTransport):
    """An httpx transport that checks the address of every request and connects to it.

    Each request: the URL's parts are checked, its host resolved and every address checked
    (:func:`checked_addresses`); the request then goes to the first address (the next on a
    connection error) with the host of its URL replaced by that address, the original ``Host``
    header kept and, for https, the TLS server name (SNI and certificate check) set to the
    original host. Refusals raise :class:`AddressRefused`, not an httpx error, so they are not
    retried.
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        max_connections: int = 8,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.allow_private = allow_private
        self._inner = transport or httpx.HTTPTransport(
            limits=httpx.Limits(max_connections=max_connections)
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        host = url.raw_host.decode("ascii")  # IDNA-encoded; an IPv6 literal without brackets
        _check_parts(url.scheme, bool(url.userinfo), host)
        addresses = checked_addresses(host, url.port, allow_private=self.allow_private)
        extensions = dict(request.extensions)
        if url.scheme == "https":
            extensions["sni_hostname"] = host
        last: httpx.ConnectError | None = None
        for ip in addresses:
            # A new request: the caller's keeps its URL (error messages name the host). httpx
            # writes an IPv6 host in brackets.
            pinned = httpx.Request(
                request.method,
                url.copy_with(host=str(ip)),
                headers=request.headers,  # carries the original Host header
                stream=request.stream,
                extensions=extensions,
            )
            try:
                return self._inner.handle_request(pinned)
            except httpx.ConnectError as exc:  # nothing was sent: try the next address
                last = exc
        assert last is not None  # resolve() never returns an empty list
        raise last

    def close(self) -> None:
        self._inner.close()


def guarded_client(
    *, allow_private: bool, timeout_s: float, headers: dict[str, str], max_connections: int
) -> httpx.Client:
    """An httpx client for an untrusted endpoint: every request through
    :class:`GuardedTransport`, redirects never followed, no proxy or credentials taken from the
    environment."""
    return httpx.Client(
        transport=GuardedTransport(allow_private=allow_private, max_connections=max_connections),
        timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
        headers=headers,
        follow_redirects=False,
        trust_env=False,
    )
