#!/usr/bin/python3
"""Certificates for the TLS tests, made with the `openssl` command at test time.

make_certs(dir) writes into dir and returns a dict of paths:

  ca, ca_key            the test CA (self-signed)
  server, server_key    signed by the CA, for CN=localhost with subjectAltName
                        DNS:localhost and IP:127.0.0.1
  server_key_enc        server_key encrypted with password PASSWORD
  client, client_key    signed by the CA, CN=client, O=Junction, OU=Tests
  router_a/_key, router_b/_key   for inter-router connections (CN=router-a/b,
                        also valid for localhost/127.0.0.1)
  other_ca, other_ca_key   a second CA nobody trusts
  rogue, rogue_key      a client certificate signed by other_ca
  expired, expired_key  signed by the CA, valid only in January 2020
  wrong_name, wrong_name_key   signed by the CA for CN=elsewhere.example only

Everything is made once per process (make_certs caches by directory): the
tests share one directory made by shared_certs().
"""
import os
import subprocess
import tempfile

PASSWORD = "s3cret-pass"
_cache = {}


def _openssl(*args, cwd=None):
    subprocess.run(["openssl"] + list(args), check=True, cwd=cwd, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _key(path):
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path)


def _ca(d, name, cn):
    key = os.path.join(d, name + "-key.pem")
    cert = os.path.join(d, name + ".pem")
    _key(key)
    _openssl("req", "-x509", "-new", "-key", key, "-out", cert, "-days", "30", "-subj",
             "/CN=%s" % cn, "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return cert, key


def _leaf(d, name, subj, ca, ca_key, san=None, client=False):
    key = os.path.join(d, name + "-key.pem")
    csr = os.path.join(d, name + ".csr")
    cert = os.path.join(d, name + ".pem")
    ext = os.path.join(d, name + ".ext")
    _key(key)
    _openssl("req", "-new", "-key", key, "-out", csr, "-subj", subj)
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\n")
        f.write("extendedKeyUsage=serverAuth,clientAuth\n")
        if san:
            f.write("subjectAltName=%s\n" % san)
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-out", cert, "-days", "30", "-extfile", ext)
    return cert, key


def _expired(d, ca, ca_key):
    """A certificate valid only in January 2020 (openssl ca takes explicit
    dates, openssl x509 -req does not)."""
    key = os.path.join(d, "expired-key.pem")
    csr = os.path.join(d, "expired.csr")
    cert = os.path.join(d, "expired.pem")
    _key(key)
    _openssl("req", "-new", "-key", key, "-out", csr, "-subj", "/CN=localhost")
    cadir = os.path.join(d, "ca-db")
    os.makedirs(cadir, exist_ok=True)
    open(os.path.join(cadir, "index.txt"), "w").close()
    with open(os.path.join(cadir, "serial"), "w") as f:
        f.write("1000\n")
    conf = os.path.join(cadir, "ca.cnf")
    with open(conf, "w") as f:
        f.write("""[ ca ]
default_ca = test
[ test ]
dir = %s
database = $dir/index.txt
serial = $dir/serial
new_certs_dir = $dir
default_md = sha256
policy = any
copy_extensions = none
x509_extensions = ext
[ any ]
commonName = supplied
[ ext ]
basicConstraints = CA:FALSE
subjectAltName = DNS:localhost,IP:127.0.0.1
""" % cadir)
    _openssl("ca", "-batch", "-config", conf, "-cert", ca, "-keyfile", ca_key, "-in", csr,
             "-out", cert, "-startdate", "20200101000000Z", "-enddate", "20200131000000Z",
             "-notext")
    return cert, key


def make_certs(d):
    if d in _cache:
        return _cache[d]
    os.makedirs(d, exist_ok=True)
    c = {}
    c["ca"], c["ca_key"] = _ca(d, "ca", "Junction Test CA")
    c["other_ca"], c["other_ca_key"] = _ca(d, "other-ca", "Nobody's CA")
    san = "DNS:localhost,IP:127.0.0.1"
    c["server"], c["server_key"] = _leaf(d, "server", "/CN=localhost", c["ca"], c["ca_key"], san)
    c["server_key_enc"] = os.path.join(d, "server-key-enc.pem")
    _openssl("pkey", "-in", c["server_key"], "-out", c["server_key_enc"], "-aes256",
             "-passout", "pass:" + PASSWORD)
    c["client"], c["client_key"] = _leaf(d, "client", "/O=Junction/OU=Tests/CN=client",
                                         c["ca"], c["ca_key"])
    for r in ("a", "b"):
        c["router_" + r], c["router_%s_key" % r] = _leaf(
            d, "router-" + r, "/O=Junction/CN=router-" + r, c["ca"], c["ca_key"], san)
    c["rogue"], c["rogue_key"] = _leaf(d, "rogue", "/CN=rogue", c["other_ca"],
                                       c["other_ca_key"], san)
    c["wrong_name"], c["wrong_name_key"] = _leaf(d, "wrong-name", "/CN=elsewhere.example",
                                                 c["ca"], c["ca_key"],
                                                 "DNS:elsewhere.example")
    c["expired"], c["expired_key"] = _expired(d, c["ca"], c["ca_key"])
    _cache[d] = c
    return c


_shared = None


def shared_certs():
    """One certificate directory for the whole test process (removed at exit)."""
    global _shared
    if _shared is None:
        import atexit
        import shutil
        d = tempfile.mkdtemp(prefix="jn-certs-")
        atexit.register(shutil.rmtree, d, True)
        _shared = make_certs(d)
    return _shared


if __name__ == "__main__":
    import sys
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="jn-certs-")
    for k, v in sorted(make_certs(out).items()):
        print("%-16s %s" % (k, v))
