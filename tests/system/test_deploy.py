#!/usr/bin/python3
"""The Kubernetes manifests (deploy/kubernetes/) and the container image's
configuration (deploy/container/), issue 19:

* yamllint accepts every manifest (deploy/kubernetes/.yamllint);
* every object is valid for its Kubernetes API model (python3-kubernetes):
  read into the model and written back, it must come out unchanged, so an
  unknown or misspelt field, or a value of the wrong type, fails;
* the objects fit together: the StatefulSet's serviceName is the headless
  Service, selectors match the pod labels, named ports exist, the ConfigMap
  mounted is the one shipped, kustomization.yaml lists every manifest;
* the ConfigMap's start.sh, run as pods 0, 1 and 2 would run it, writes
  configurations that junctiond accepts and that form a full mesh: three
  routers started from them here (hosts and ports moved to 127.0.0.1)
  answer the pods' HTTP probes (readiness: the mesh reached) and route a
  message from pod 2's clients to pod 0's; an edge router written by the
  edge ConfigMap's start.sh joins through pod 0's edge port and its client
  receives from pod 2;
* the image's configuration listens on 0.0.0.0 and is valid.

The image build itself is test_package_container.py.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import unittest

import yaml

from harness import SLOW, SOURCE_DIR, Router, RouterTestCase, run_junctiond
from mesh import distinct_ports

K8S = os.path.join(SOURCE_DIR, "deploy", "kubernetes")
try:
    from kubernetes.client import ApiClient
except ImportError:  # python3-kubernetes
    ApiClient = None

MODELS = {("v1", "ConfigMap"): "V1ConfigMap", ("v1", "Service"): "V1Service",
          ("apps/v1", "StatefulSet"): "V1StatefulSet",
          ("apps/v1", "Deployment"): "V1Deployment",
          ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget"}


def manifests():
    """[(file, object)] of every Kubernetes object in deploy/kubernetes."""
    out = []
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml"))):
        if os.path.basename(path) == "kustomization.yaml":
            continue
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    out.append((os.path.basename(path), doc))
    return out


def by_kind(kind):
    return [o for _, o in manifests() if o["kind"] == kind]


def config_map(name):
    return [c for c in by_kind("ConfigMap") if c["metadata"]["name"] == name][0]


class _Json:
    """What ApiClient.deserialize reads: a response with .data."""

    def __init__(self, obj):
        self.data = json.dumps(obj)


class ManifestTest(unittest.TestCase):

    maxDiff = None

    def test_yamllint(self):
        if not shutil.which("yamllint"):
            self.skipTest("yamllint is not installed (Debian package yamllint; ./dev installs "
                          "it)")
        p = subprocess.run(["yamllint", "--strict", "-c", os.path.join(K8S, ".yamllint"), K8S],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    @unittest.skipIf(ApiClient is None, "python3-kubernetes is not installed (./dev installs "
                     "it)")
    def test_every_object_matches_its_api_model(self):
        api = ApiClient()
        seen = set()
        for name, obj in manifests():
            key = (obj.get("apiVersion"), obj.get("kind"))
            with self.subTest(file=name, kind=key):
                self.assertIn(key, MODELS, "no model known for %s %s" % key)
                model = api.deserialize(_Json(obj), MODELS[key])
                self.assertEqual(api.sanitize_for_serialization(model), obj,
                                 "fields the %s model does not have, or of the wrong type"
                                 % MODELS[key])
                seen.add(obj["kind"])
        self.assertEqual(seen, {"ConfigMap", "Service", "StatefulSet", "Deployment",
                                "PodDisruptionBudget"})
        # the check catches a misspelt field
        bad = dict(by_kind("StatefulSet")[0])
        bad["spec"] = dict(bad["spec"], replicass=3)
        model = api.deserialize(_Json(bad), "V1StatefulSet")
        self.assertNotEqual(api.sanitize_for_serialization(model), bad)

    def test_objects_fit_together(self):
        sts = by_kind("StatefulSet")[0]
        services = {s["metadata"]["name"]: s for s in by_kind("Service")}
        maps = {c["metadata"]["name"]: c for c in by_kind("ConfigMap")}
        labels = sts["spec"]["template"]["metadata"]["labels"]
        headless = services[sts["spec"]["serviceName"]]
        self.assertEqual(headless["spec"]["clusterIP"], "None")
        # every workload (interiors, edges): selector = pod labels, its
        # ConfigMap shipped, HTTP probes on a named port
        pods = []
        for w in by_kind("StatefulSet") + by_kind("Deployment"):
            wl = w["spec"]["template"]["metadata"]["labels"]
            self.assertEqual(w["spec"]["selector"]["matchLabels"], wl)
            spec = w["spec"]["template"]["spec"]
            ports = {p["name"]: p["containerPort"] for c in spec["containers"]
                     for p in c["ports"]}
            pods.append((wl, ports))
            for v in spec["volumes"]:
                if "configMap" in v:
                    self.assertIn(v["configMap"]["name"], maps)
            for probe in ("readinessProbe", "livenessProbe"):
                # HTTP probes on a named port of the container (the
                # ConfigMap's http listener; MeshFromConfigMapTest fetches
                # their paths)
                self.assertIn(spec["containers"][0][probe]["httpGet"]["port"], ports)
            self.assertTrue(spec["securityContext"]["runAsNonRoot"])
        # every Service selects the pods of one workload, on their ports
        for s in services.values():
            matches = [ports for wl, ports in pods
                       if all(wl.get(k) == v for k, v in s["spec"]["selector"].items())]
            self.assertEqual(len(matches), 1, s["metadata"]["name"])
            for p in s["spec"]["ports"]:
                self.assertIn(p["targetPort"], matches[0])
        pdb = by_kind("PodDisruptionBudget")[0]
        for k, v in pdb["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v)
        with open(os.path.join(K8S, "kustomization.yaml")) as f:
            kust = yaml.safe_load(f)
        self.assertEqual(sorted(kust["resources"]),
                         sorted(os.path.basename(p) for p in glob.glob(os.path.join(K8S, "*.yaml"))
                                if not p.endswith("kustomization.yaml")))

    def test_container_configuration(self):
        path = os.path.join(SOURCE_DIR, "deploy", "container", "junctiond.conf")
        with open(path) as f:
            text = f.read()
        self.assertRegex(text, r"(?m)^\s*host: 0\.0\.0\.0$")
        self.assertRegex(text, r"(?m)^\s*port: 5672$")
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(SOURCE_DIR, "deploy", "Containerfile")) as f:
            recipe = f.read()
        self.assertRegex(recipe, r"(?m)^ARG BASE=\S*debian:bookworm")
        self.assertRegex(recipe, r"(?m)^USER 10001:10001$")
        self.assertIn('ENTRYPOINT ["/usr/sbin/junctiond"]', recipe)


class MeshFromConfigMapTest(RouterTestCase):
    """start.sh as three pods would run it, the mesh formed on 127.0.0.1."""

    def generate(self, ordinal, amqp_ports, mesh_ports, http_ports, edge_ports):
        cm = config_map("junction-interior")
        tdir = os.path.join(self.workdir, "template")
        rdir = os.path.join(self.workdir, "run-%d" % ordinal)
        os.makedirs(tdir, exist_ok=True)
        os.makedirs(rdir)
        with open(os.path.join(tdir, "junctiond.conf.in"), "w") as f:
            f.write(cm["data"]["junctiond.conf.in"])
        script = (cm["data"]["start.sh"].replace("/etc/junction-template", tdir)
                  .replace("/run/junction", rdir)
                  .replace('exec /usr/sbin/junctiond -c "$conf"', 'exit 0'))
        env = dict(os.environ, HOSTNAME="junction-interior-%d" % ordinal)
        p = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        path = os.path.join(rdir, "junctiond.conf")
        with open(path) as f:
            conf = f.read()
        # as written for the pod: valid, id = pod name, connectors to the pods below
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("id: junction-interior-%d\n" % ordinal, conf)
        self.assertEqual(re.findall(r"host: (junction-interior-\d+)\.junction-interior-mesh",
                                    conf),
                         ["junction-interior-%d" % i for i in range(ordinal)])
        # moved to this machine
        conf = conf.replace("port: 5672\n", "port: %d\n" % amqp_ports[ordinal])
        conf = conf.replace("port: 8080\n", "port: %d\n" % http_ports[ordinal])
        conf = conf.replace("port: 45672\n", "port: %d\n" % edge_ports[ordinal])
        conf = conf.replace("    port: 55672\n    role: inter-router\n    saslMechanisms: "
                            "ANONYMOUS\n    authenticatePeer: no",
                            "    port: %d\n    role: inter-router\n    saslMechanisms: "
                            "ANONYMOUS\n    authenticatePeer: no" % mesh_ports[ordinal])
        for i in range(ordinal):
            conf = conf.replace("host: junction-interior-%d.junction-interior-mesh\n"
                                "    port: 55672" % i,
                                "host: 127.0.0.1\n    port: %d" % mesh_ports[i])
        self.assertNotIn("55672", conf)
        return conf.replace("host: 0.0.0.0", "host: 127.0.0.1")

    def test_three_pods_form_a_mesh(self):
        # six distinct ports, all bound at once while chosen (one at a time,
        # two could be the same port: seen in CI as "Address already in use")
        ports = distinct_ports(["a0", "a1", "a2", "m0", "m1", "m2", "h0", "h1", "h2",
                                "e0", "e1", "e2", "ea", "eh"])
        amqp = [ports["a%d" % i] for i in range(3)]
        mesh = [ports["m%d" % i] for i in range(3)]
        http = [ports["h%d" % i] for i in range(3)]
        edge = [ports["e%d" % i] for i in range(3)]
        routers = []
        for i in range(3):
            r = Router(self.workdir, name="pod%d" % i, config=self.generate(i, amqp, mesh, http, edge))
            r.port = amqp[i]
            r.start()
            self.routers.append(r)
            self.addCleanup(self._stop_router, r)
            routers.append(r.wait_ready())

        def mesh_size(r):
            p = subprocess.run(["/usr/bin/python3", os.path.join(SOURCE_DIR, "tools",
                                                                 "junction-stat"),
                                "-b", r.url, "-n", "--json"], capture_output=True, text=True,
                               timeout=60)
            if p.returncode != 0:
                return 0
            doc = json.loads(p.stdout)
            return len(doc["tables"][0]["rows"]) if doc["tables"] else 0
        for r in routers:
            self.wait_for("%s to see all three routers" % r.name, lambda r=r: mesh_size(r) == 3,
                          timeout=30 * SLOW)
        # the pods' probes, as the kubelet would fetch them: ready (the mesh
        # reached) and alive
        container = by_kind("StatefulSet")[0]["spec"]["template"]["spec"]["containers"][0]
        for probe in ("readinessProbe", "livenessProbe"):
            path = container[probe]["httpGet"]["path"]
            for i in range(3):
                url = "http://127.0.0.1:%d%s" % (http[i], path)
                self.wait_for("%s to answer 200" % url, lambda url=url: http_status(url) == 200,
                              timeout=30 * SLOW)
        # a receiver on pod 0, a sender on pod 2: the message crosses the mesh
        try:
            got = route_across(routers[0].url, routers[2].url)
        except Exception as e:  # the routers' logs say why
            self.fail("%r\n%s" % (e, self.logs()))
        self.assertEqual(got, "across", self.logs())
        # an edge router as an edge pod writes it, its uplink (the junction
        # Service in the cluster) to pod 0's edge port: a sender on pod 2
        # reaches a receiver on the edge
        e = Router(self.workdir, name="edge", config=self.generate_edge(edge[0], ports["ea"],
                                                                         ports["eh"]))
        e.port = ports["ea"]
        e.start()
        self.routers.append(e)
        self.addCleanup(self._stop_router, e)
        e.wait_ready()
        try:
            got = route_across(e.url, routers[2].url)
        except Exception as ex:  # the routers' logs say why
            self.fail("%r\n%s" % (ex, self.logs()))
        self.assertEqual(got, "across", self.logs())

    def generate_edge(self, uplink_port, amqp_port, http_port):
        cm = config_map("junction-edge")
        tdir = os.path.join(self.workdir, "edge-template")
        rdir = os.path.join(self.workdir, "run-edge")
        os.makedirs(tdir)
        os.makedirs(rdir)
        with open(os.path.join(tdir, "junctiond.conf.in"), "w") as f:
            f.write(cm["data"]["junctiond.conf.in"])
        script = (cm["data"]["start.sh"].replace("/etc/junction-template", tdir)
                  .replace("/run/junction", rdir)
                  .replace('exec /usr/sbin/junctiond -c "$conf"', 'exit 0'))
        env = dict(os.environ, HOSTNAME="junction-edge-5d8f7c6b9-x2k4p")
        p = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        path = os.path.join(rdir, "junctiond.conf")
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(path) as f:
            conf = f.read()
        self.assertIn("id: junction-edge-5d8f7c6b9-x2k4p\n", conf)
        self.assertIn("mode: edge\n", conf)
        # moved to this machine
        self.assertIn("host: junction\n    port: 45672\n", conf)
        conf = conf.replace("host: junction\n    port: 45672\n",
                            "host: 127.0.0.1\n    port: %d\n" % uplink_port)
        conf = conf.replace("port: 5672\n", "port: %d\n" % amqp_port)
        conf = conf.replace("port: 8080\n", "port: %d\n" % http_port)
        return conf.replace("host: 0.0.0.0", "host: 127.0.0.1")


def http_status(url):
    """The status of a GET of url (0 when nothing answers)."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def route_across(recv_url, send_url):
    """One unsettled message sent on send_url to a receiver on recv_url (in
    its own thread, so that it accepts while the sender waits). The sender
    gets credit only once the receiver's address has reached its router."""
    import threading
    from proton import Message
    from proton.utils import BlockingConnection
    got, ready = [], threading.Event()

    def receive():
        rc = BlockingConnection(recv_url, timeout=30 * SLOW, allowed_mechs="ANONYMOUS")
        try:
            receiver = rc.create_receiver("mesh.test")
            ready.set()
            got.append(receiver.receive(timeout=30 * SLOW).body)
            receiver.accept()
        except Exception as e:  # reported by the caller, with the router's reason
            got.append("receiver failed: %r (remote condition %s)"
                       % (e, rc.conn.remote_condition))
            ready.set()
        finally:
            rc.close()
    t = threading.Thread(target=receive)
    t.start()
    ready.wait(30 * SLOW)
    sc = BlockingConnection(send_url, timeout=30 * SLOW, allowed_mechs="ANONYMOUS")
    try:
        sc.create_sender("mesh.test").send(Message(body="across"), timeout=30 * SLOW)
    finally:
        sc.close()
    t.join(30 * SLOW)
    return got[0] if got else None


if __name__ == "__main__":
    unittest.main()
