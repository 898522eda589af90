"""A provider's side of APNs token authentication, as Apple documents it ("Establishing a
token-based connection to APNs"): an ES256 JWT with the key id in its header and the team and the
issue time in its claims, signed with the .p8 key `herald keys create` wrote."""
import base64
import json
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def load_key(path):
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), password=None)


def provider_jwt(key, key_id, team, der=False, iat=None):
    """The bearer token; `der` signs in DER (as `openssl dgst -sign` writes, which APNs refuses)."""
    header = b64(json.dumps({"alg": "ES256", "kid": key_id}).encode())
    claims = b64(json.dumps({"iss": team, "iat": int(iat if iat is not None else time.time())}).encode())
    signing_input = f"{header}.{claims}".encode()
    signature = key.sign(signing_input, ec.ECDSA(hashes.SHA256()))
    if not der:
        r, s = decode_dss_signature(signature)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{header}.{claims}.{b64(signature)}"
