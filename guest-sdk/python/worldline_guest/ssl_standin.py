"""A stand-in ``ssl`` module for the sandbox's Python, which has no ``_ssl``
(componentize-py's CPython is built without OpenSSL). The official SDKs
import ``ssl`` when they load and build a context for their HTTP client;
in the sandbox every request goes through ``wasi:http``, which the world
answers itself, so no TLS handshake is ever made.

What it gives: ``SSLContext`` (and ``create_default_context``) whose
settings are kept and whose certificate loads are accepted and ignored,
the protocol, verify-mode, version and option constants, and the error
classes. What it refuses: a handshake (``wrap_socket``, ``wrap_bio``)
raises ``SSLError`` saying so, and certificate or session data
(``get_server_certificate``, ``DER_cert_to_PEM_cert``) is not there.
Deterministic: nothing in it reads a clock, randomness or a file."""

import enum
import sys
import types

REFUSED = (
    "no TLS in the sandbox: requests go through wasi:http, which the world "
    "answers itself; use an HTTP client that worldline build-python patches "
    "(urllib, http.client, httpx, httpx2)"
)


class SSLError(OSError):
    pass


class SSLZeroReturnError(SSLError):
    pass


class SSLWantReadError(SSLError):
    pass


class SSLWantWriteError(SSLError):
    pass


class SSLSyscallError(SSLError):
    pass


class SSLEOFError(SSLError):
    pass


class SSLCertVerificationError(SSLError, ValueError):
    pass


CertificateError = SSLCertVerificationError


class _SSLMethod(enum.IntEnum):
    PROTOCOL_TLS = 2
    PROTOCOL_TLS_CLIENT = 16
    PROTOCOL_TLS_SERVER = 17


class VerifyMode(enum.IntEnum):
    CERT_NONE = 0
    CERT_OPTIONAL = 1
    CERT_REQUIRED = 2


class VerifyFlags(enum.IntFlag):
    VERIFY_DEFAULT = 0
    VERIFY_CRL_CHECK_LEAF = 4
    VERIFY_CRL_CHECK_CHAIN = 12
    VERIFY_X509_STRICT = 32
    VERIFY_ALLOW_PROXY_CERTS = 64
    VERIFY_X509_TRUSTED_FIRST = 32768
    VERIFY_X509_PARTIAL_CHAIN = 524288


class Options(enum.IntFlag):
    OP_ALL = 0x80000050
    OP_NO_SSLv2 = 0
    OP_NO_SSLv3 = 0x02000000
    OP_NO_TLSv1 = 0x04000000
    OP_NO_TLSv1_1 = 0x10000000
    OP_NO_TLSv1_2 = 0x08000000
    OP_NO_TLSv1_3 = 0x20000000
    OP_NO_COMPRESSION = 0x00020000
    OP_NO_TICKET = 0x00004000
    OP_NO_RENEGOTIATION = 0x40000000
    OP_CIPHER_SERVER_PREFERENCE = 0x00400000
    OP_SINGLE_DH_USE = 0
    OP_SINGLE_ECDH_USE = 0
    OP_ENABLE_MIDDLEBOX_COMPAT = 0x00100000
    OP_IGNORE_UNEXPECTED_EOF = 0x80


class TLSVersion(enum.IntEnum):
    MINIMUM_SUPPORTED = -2
    SSLv3 = 768
    TLSv1 = 769
    TLSv1_1 = 770
    TLSv1_2 = 771
    TLSv1_3 = 772
    MAXIMUM_SUPPORTED = -1


class Purpose(enum.Enum):
    SERVER_AUTH = "1.3.6.1.5.5.7.3.1"
    CLIENT_AUTH = "1.3.6.1.5.5.7.3.2"


class SSLContext:
    """A TLS context that keeps its settings and never handshakes."""

    def __init__(self, protocol=None, *args, **kwargs):
        self.protocol = _SSLMethod.PROTOCOL_TLS if protocol is None else protocol
        client = self.protocol == _SSLMethod.PROTOCOL_TLS_CLIENT
        self.check_hostname = client
        self.verify_mode = VerifyMode.CERT_REQUIRED if client else VerifyMode.CERT_NONE
        self.verify_flags = VerifyFlags.VERIFY_X509_TRUSTED_FIRST
        self.options = Options.OP_ALL | Options.OP_NO_SSLv3
        self.minimum_version = TLSVersion.MINIMUM_SUPPORTED
        self.maximum_version = TLSVersion.MAXIMUM_SUPPORTED
        self.post_handshake_auth = None
        self.keylog_filename = None
        self.sni_callback = None

    # Certificates and ciphers: accepted and not used (no handshake).
    def load_verify_locations(self, cafile=None, capath=None, cadata=None):
        pass

    def load_default_certs(self, purpose=Purpose.SERVER_AUTH):
        pass

    def set_default_verify_paths(self):
        pass

    def load_cert_chain(self, certfile, keyfile=None, password=None):
        pass

    def set_ciphers(self, ciphers):
        pass

    def set_alpn_protocols(self, protocols):
        pass

    def set_npn_protocols(self, protocols):
        pass

    def set_ecdh_curve(self, name):
        pass

    def get_ca_certs(self, binary_form=False):
        return []

    def get_ciphers(self):
        return []

    def cert_store_stats(self):
        return {"crl": 0, "x509": 0, "x509_ca": 0}

    def wrap_socket(self, *args, **kwargs):
        raise SSLError(REFUSED)

    def wrap_bio(self, *args, **kwargs):
        raise SSLError(REFUSED)


def create_default_context(purpose=Purpose.SERVER_AUTH, *, cafile=None, capath=None, cadata=None):
    if purpose == Purpose.SERVER_AUTH:
        return SSLContext(_SSLMethod.PROTOCOL_TLS_CLIENT)
    return SSLContext(_SSLMethod.PROTOCOL_TLS_SERVER)


def _refuse(*args, **kwargs):
    raise SSLError(REFUSED)


def module():
    """The stand-in as a module named ``ssl``."""
    m = types.ModuleType("ssl", __doc__)
    names = dict(globals())
    for name in (
        "SSLError SSLZeroReturnError SSLWantReadError SSLWantWriteError SSLSyscallError "
        "SSLEOFError SSLCertVerificationError CertificateError VerifyMode VerifyFlags "
        "Options TLSVersion Purpose SSLContext create_default_context"
    ).split():
        setattr(m, name, names[name])
    for enum_class in (_SSLMethod, VerifyMode, VerifyFlags, Options):
        for member in enum_class:
            setattr(m, member.name, member)
    m._create_default_https_context = create_default_context
    m._create_unverified_context = create_default_context
    m.SSLSocket = m.SSLObject = m.MemoryBIO = m.SSLSession = type("Refused", (), {"__init__": _refuse})
    m.get_server_certificate = m.DER_cert_to_PEM_cert = m.PEM_cert_to_DER_cert = _refuse
    m.HAS_SNI = m.HAS_ALPN = m.HAS_ECDH = m.HAS_TLSv1_2 = m.HAS_TLSv1_3 = True
    m.HAS_NEVER_CHECK_COMMON_NAME = True
    m.OPENSSL_VERSION = "none (worldline sandbox: no TLS)"
    m.OPENSSL_VERSION_INFO = (0, 0, 0, 0, 0)
    m.OPENSSL_VERSION_NUMBER = 0
    m.CHANNEL_BINDING_TYPES = []
    return m


def install():
    """Make ``import ssl`` give the stand-in when the real module cannot
    load (no ``_ssl``); a Python with ``_ssl`` keeps its own."""
    if "ssl" in sys.modules:
        return
    try:
        import ssl  # noqa: F401
    except ImportError:
        sys.modules["ssl"] = module()
