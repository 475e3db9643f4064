#!/usr/bin/env python3
"""deploy/kubernetes checked as far as a machine without an API server allows.

- The agent-sandbox objects (SandboxTemplate, SandboxWarmPool) are validated against the
  openAPIV3Schema of the CRDs agent-sandbox v0.5.6 publishes (tests/placement/kubernetes/crds),
  strictly: a field the schema does not know is an error, as the API server's strict field
  validation makes it. The SandboxClaims of the recorded API exchanges that the Kubernetes
  client is tested against are validated the same way.
- What the manifests promise is asserted: gVisor, no service-account token, a read-only root,
  a non-root user, limits, a NetworkPolicy that lets the front alone in and nothing out, and a
  Role that grants exactly what the client's requests need.
- The agent's settings (the image's environment and the template's) are read by the binary
  itself (--print-config), as it would read them in the pod, in a root without the files that
  show a container.

Usage: kubernetes_manifests_test.py BINARY
"""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEPLOY = os.path.join(REPO, "deploy", "kubernetes")
CRDS = os.path.join(REPO, "tests", "placement", "kubernetes", "crds")
RECORDINGS = os.path.join(REPO, "tests", "placement", "kubernetes")
BINARY = None
NAMESPACE = "backyard-mcp"


def documents(name):
    with open(os.path.join(DEPLOY, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def all_documents():
    out = []
    for name in sorted(os.listdir(DEPLOY)):
        if name.endswith(".yaml") and name != "kustomization.yaml":
            out += [(name, d) for d in documents(name)]
    return out


def strict(schema):
    """The schema with unknown fields refused wherever it lists the known ones."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def crd_schemas():
    """{(group/version, kind): strict openAPIV3Schema} of the served versions."""
    out = {}
    for name in sorted(os.listdir(CRDS)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(CRDS, name)) as f:
            crd = yaml.safe_load(f)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                out[(f"{group}/{version['name']}", kind)] = strict(
                    version["schema"]["openAPIV3Schema"])
    return out


SCHEMAS = crd_schemas()
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def problems(obj):
    """What the API server would refuse in `obj`, an agent-sandbox object: [] when nothing."""
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key not in SCHEMAS:
        return [f"no served CRD version for {key}"]
    found = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
             for e in jsonschema.Draft7Validator(SCHEMAS[key]).iter_errors(obj)]
    meta = obj.get("metadata", {})
    name = meta.get("name", meta.get("generateName", "x").rstrip("-") or "x")
    if not DNS_NAME.match(name) or len(name) > 253:
        found.append(f"metadata.name: '{name}' is no DNS subdomain name")
    for label, value in meta.get("labels", {}).items():
        if not isinstance(value, str) or not LABEL_VALUE.match(value) or len(value) > 63:
            found.append(f"metadata.labels.{label}: '{value}' is no label value")
    return found


class AgentSandboxObjects(unittest.TestCase):
    def test_each_manifest_matches_its_crd(self):
        checked = 0
        for name, doc in all_documents():
            if doc["apiVersion"].split("/")[0].endswith("agents.x-k8s.io"):
                self.assertEqual(problems(doc), [], name)
                checked += 1
        self.assertEqual(checked, 2)  # the template and the warm pool

    def test_the_check_refuses_what_the_api_server_would(self):
        template = documents("agent-template.yaml")[0]
        pool = documents("warm-pool.yaml")[0]
        cases = []
        typo = copy.deepcopy(template)
        sc = typo["spec"]["podTemplate"]["spec"]["containers"][0]["securityContext"]
        sc["readOnlyRootFileSystem"] = sc.pop("readOnlyRootFilesystem")
        cases.append(("a misspelt field", typo, "readOnlyRootFileSystem"))
        wrong_type = copy.deepcopy(pool)
        wrong_type["spec"]["replicas"] = "two"
        cases.append(("a count that is text", wrong_type, "'two' is not of type 'integer'"))
        missing = copy.deepcopy(pool)
        del missing["spec"]["sandboxTemplateRef"]
        cases.append(("no template", missing, "'sandboxTemplateRef' is a required property"))
        bad_enum = copy.deepcopy(template)
        bad_enum["spec"]["networkPolicyManagement"] = "Sometimes"
        cases.append(("a value outside the enum", bad_enum, "'Sometimes' is not one of"))
        no_image_name = copy.deepcopy(template)
        del no_image_name["spec"]["podTemplate"]["spec"]["containers"][0]["name"]
        cases.append(("a container without a name", no_image_name, "'name' is a required"))
        bad_label = copy.deepcopy(pool)
        bad_label["metadata"]["labels"]["app.kubernetes.io/part-of"] = "not a label!"
        cases.append(("a label value with spaces", bad_label, "is no label value"))
        for what, obj, expected in cases:
            found = problems(obj)
            self.assertTrue(any(expected in p for p in found), f"{what}: {found}")

    def test_the_recorded_claims_have_agent_sandbox_shapes(self):
        claims = 0

        def visit(node):
            nonlocal claims
            if isinstance(node, dict):
                if node.get("type") == "BOOKMARK":
                    return  # a bookmark's object is its resourceVersion alone, by design
                if node.get("kind") == "SandboxClaim" and "apiVersion" in node:
                    self.assertEqual(problems(node), [], json.dumps(node)[:300])
                    claims += 1
                for value in node.values():
                    visit(value)
            elif isinstance(node, list):
                for value in node:
                    visit(value)

        for name in sorted(os.listdir(RECORDINGS)):
            if name.endswith(".json"):
                with open(os.path.join(RECORDINGS, name)) as f:
                    visit(json.load(f))
        self.assertGreaterEqual(claims, 10)


class WhatTheManifestsPromise(unittest.TestCase):
    def setUp(self):
        self.template = documents("agent-template.yaml")[0]
        self.pod = self.template["spec"]["podTemplate"]["spec"]

    def test_everything_is_in_one_namespace_and_applied_together(self):
        for name, doc in all_documents():
            if doc["kind"] not in ("Namespace", "RuntimeClass"):
                self.assertEqual(doc["metadata"].get("namespace"), NAMESPACE,
                                 f"{name}: {doc['kind']}")
            self.assertNotIn(doc["kind"], ("ClusterRole", "ClusterRoleBinding"), name)
        listed = set(documents("kustomization.yaml")[0]["resources"])
        present = {n for n in os.listdir(DEPLOY) if n.endswith(".yaml")}
        # The RuntimeClass is the cluster's (GKE has its own); applied by hand where missing.
        self.assertEqual(listed, present - {"kustomization.yaml", "runtime-class.yaml"})
        runtime = documents("runtime-class.yaml")[0]
        self.assertEqual(runtime["metadata"]["name"], self.pod["runtimeClassName"])

    def assert_locked_down(self, pod):
        """No host namespaces, a read-only root, a non-root user without capabilities or
        privilege escalation, RuntimeDefault seccomp, limits, no host paths."""
        self.assertIs(pod.get("hostNetwork", False), False)
        self.assertIs(pod.get("hostPID", False), False)
        self.assertEqual(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault")
        for c in pod["containers"] + pod.get("initContainers", []):
            sc = {**pod["securityContext"], **c.get("securityContext", {})}
            self.assertIs(sc["readOnlyRootFilesystem"], True, c["name"])
            self.assertIs(sc["allowPrivilegeEscalation"], False, c["name"])
            self.assertIs(sc["runAsNonRoot"], True, c["name"])
            self.assertNotEqual(sc.get("runAsUser", 0), 0, c["name"])
            self.assertEqual(sc["capabilities"]["drop"], ["ALL"], c["name"])
            self.assertNotIn("add", sc["capabilities"], c["name"])
            self.assertIs(sc.get("privileged", False), False, c["name"])
            for resource in ("cpu", "memory", "ephemeral-storage"):
                self.assertIn(resource, c["resources"]["limits"], c["name"])
        for volume in pod["volumes"]:
            self.assertNotIn("hostPath", volume, volume["name"])
            if "emptyDir" in volume:
                self.assertIn("sizeLimit", volume["emptyDir"], volume["name"])

    def test_the_agent_pod_is_locked_down(self):
        self.assertEqual(self.pod["runtimeClassName"], "gvisor")
        self.assertIs(self.pod["automountServiceAccountToken"], False)
        self.assert_locked_down(self.pod)

    def test_the_front_is_locked_down_and_is_what_the_agents_let_in(self):
        front = {d["kind"]: d for d in documents("front.yaml")}
        rbac = {d["kind"]: d for d in documents("front-rbac.yaml")}
        deployment, service = front["Deployment"], front["Service"]
        pod = deployment["spec"]["template"]["spec"]
        self.assert_locked_down(pod)
        # It runs as the Role's service account, with its token: the only pod that has one.
        self.assertEqual(pod["serviceAccountName"], rbac["ServiceAccount"]["metadata"]["name"])
        self.assertIs(pod["automountServiceAccountToken"], True)
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        let_in = self.template["spec"]["networkPolicy"]["ingress"][0]["from"][0]
        for key, value in let_in["podSelector"]["matchLabels"].items():
            self.assertEqual(labels.get(key), value)
        self.assertEqual(deployment["spec"]["selector"]["matchLabels"].items() - labels.items(),
                         set())
        self.assertEqual(service["spec"]["selector"].items() - labels.items(), set())
        container = pod["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        self.assertIn(service["spec"]["ports"][0]["targetPort"], ports)
        # The agents' token is the Secret the agents mount.
        secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
        agent_secrets = {v["secret"]["secretName"] for v in self.pod["volumes"] if "secret" in v}
        env = {e["name"]: e["value"] for e in container["env"]}
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        agent_mount = mounts[os.path.dirname(env["BACKYARD_AGENT_TOKEN_FILE"])]
        self.assertEqual({secrets[agent_mount]}, agent_secrets)
        front_mount = mounts[os.path.dirname(env["BACKYARD_TOKEN_FILE"])]
        self.assertNotEqual(secrets[front_mount], secrets[agent_mount])

    def test_only_the_front_gets_in_and_nothing_gets_out(self):
        policy = self.template["spec"]["networkPolicy"]
        self.assertEqual(self.template["spec"]["networkPolicyManagement"], "Managed")
        self.assertEqual(policy["egress"], [])  # an empty list: all egress denied
        self.assertEqual(len(policy["ingress"]), 1)
        rule = policy["ingress"][0]
        self.assertEqual(rule["from"],
                         [{"podSelector": {"matchLabels":
                                           {"app.kubernetes.io/name": "backyard-front"}}}])
        agent_port = self.pod["containers"][0]["ports"][0]["containerPort"]
        self.assertEqual(rule["ports"], [{"protocol": "TCP", "port": agent_port}])
        # Nobody else's pods carry the front's label: the agents carry their own.
        labels = self.template["spec"]["podTemplate"]["metadata"]["labels"]
        self.assertEqual(labels["app.kubernetes.io/name"], "backyard-agent")

    def test_the_warm_pool_serves_the_template(self):
        pool = documents("warm-pool.yaml")[0]
        self.assertEqual(pool["spec"]["sandboxTemplateRef"]["name"],
                         self.template["metadata"]["name"])
        self.assertGreaterEqual(pool["spec"]["replicas"], 1)

    def test_the_role_grants_exactly_what_the_client_asks(self):
        rbac = {d["kind"]: d for d in documents("front-rbac.yaml")}
        granted = set()
        for rule in rbac["Role"]["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        self.assertNotEqual("*", verb)
                        granted.add((group, resource, verb))
        # What the Kubernetes client's recorded requests need, as the API server authorizes
        # them: POST create; GET of a name get; GET of a collection list, or watch with ?watch.
        needed = set()
        for name in sorted(os.listdir(RECORDINGS)):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(RECORDINGS, name)) as f:
                recording = json.load(f)
            for exchange in recording["exchanges"]:
                request = exchange["request"]
                parts = urllib.parse.urlsplit(request["path"]).path.strip("/").split("/")
                # /apis/GROUP/VERSION/namespaces/NS/RESOURCE[/NAME], or the core group's
                # /api/VERSION/namespaces/NS/RESOURCE[/NAME]
                if parts[0] == "api":
                    parts.insert(1, "")
                self.assertIn(parts[0], ("api", "apis"), request["path"])
                self.assertEqual(parts[3], "namespaces", request["path"])
                group, resource, named = parts[1], parts[5], len(parts) > 6
                query = request.get("query", {})
                verb = {"POST": "create", "DELETE": "delete", "PATCH": "patch"}.get(request["method"])
                if verb is None:
                    verb = "get" if named else "watch" if query.get("watch") else "list"
                needed.add((group, resource, verb))
        self.assertEqual(granted, needed)
        binding = rbac["RoleBinding"]
        self.assertEqual(binding["roleRef"], {"apiGroup": "rbac.authorization.k8s.io",
                                              "kind": "Role", "name": rbac["Role"]["metadata"]["name"]})
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount",
                                                "name": rbac["ServiceAccount"]["metadata"]["name"],
                                                "namespace": NAMESPACE}])


def image_env():
    """The ENV of deploy/agent/Dockerfile."""
    with open(os.path.join(REPO, "deploy", "agent", "Dockerfile")) as f:
        text = f.read().replace("\\\n", " ")
    env = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            for pair in line[4:].split():
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def print_config(env, workspace):
    """--print-config of the binary with `env` alone, in a root that holds none of the files
    that show a container (/.dockerenv, /run/.containerenv), as a pod's root may not: what the
    binary then sees of a container is the environment's. Under bwrap (Debian's bubblewrap)."""
    binary = os.path.realpath(BINARY)
    argv = ["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
            "--ro-bind", "/etc", "/etc", "--ro-bind", os.path.dirname(binary),
            os.path.dirname(binary), "--bind", workspace, workspace, "--proc", "/proc",
            "--dev", "/dev", "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return subprocess.run(argv + [binary, "--print-config"], capture_output=True, text=True,
                          timeout=60)


class TheAgentReadsItsSettings(unittest.TestCase):
    def test_the_pods_environment_makes_the_agent_it_describes(self):
        pod = documents("agent-template.yaml")[0]["spec"]["podTemplate"]["spec"]
        container = pod["containers"][0]
        env = {"PATH": "/usr/bin:/bin", **image_env()}
        env.update({e["name"]: e["value"] for e in container["env"]})
        token_dir = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "token")
        self.assertEqual(os.path.dirname(env["BACKYARD_TOKEN_FILE"]), token_dir)
        with tempfile.TemporaryDirectory() as tmp:
            env["BACKYARD_ROOT"] = tmp  # the pod's /workspace
            env["BACKYARD_TOKEN_FILE"] = os.path.join(tmp, "token")  # the Secret's file
            with open(env["BACKYARD_TOKEN_FILE"], "w") as f:
                f.write("s3cret\n")
            r = print_config(env, tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            got = json.loads(r.stdout)
            # Without the pod's evidence of a container, the same settings are refused.
            del env["container"]
            refused = print_config(env, tmp)
        self.assertEqual(got["transport"]["value"], "http")
        self.assertEqual(got["sandbox"]["value"], "container")
        self.assertEqual(got["allow_host"]["value"], [".svc.cluster.local"])
        listen = got["listen"]["value"]
        self.assertEqual(int(listen.rsplit(":", 1)[1]), container["ports"][0]["containerPort"])
        for probe in ("readinessProbe", "livenessProbe"):
            get = container[probe]["httpGet"]
            self.assertEqual(get["path"], "/healthz")
            host = {h["name"]: h["value"] for h in get["httpHeaders"]}["Host"]
            self.assertEqual(host, "127.0.0.1:" + listen.rsplit(":", 1)[1])
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("--sandbox container: this server does not run in a container",
                      refused.stderr)


class TheFrontReadsItsSettings(unittest.TestCase):
    def test_the_fronts_environment_makes_the_front_it_describes(self):
        pod = documents("front.yaml")[0]["spec"]["template"]["spec"]
        container = pod["containers"][0]
        agent = documents("agent-template.yaml")[0]["spec"]["podTemplate"]["spec"]
        env = {"PATH": "/usr/bin:/bin"}
        env.update({e["name"]: e["value"] for e in container["env"]})
        with tempfile.TemporaryDirectory() as tmp:
            for key in ("BACKYARD_TOKEN_FILE", "BACKYARD_AGENT_TOKEN_FILE"):  # the Secrets
                env[key] = os.path.join(tmp, key.lower())
                with open(env[key], "w") as f:
                    f.write(key.lower() + "-s3cret\n")
            r = print_config(env, tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = {k: v["value"] for k, v in json.loads(r.stdout).items()}
        self.assertEqual(got["transport"], "http")
        self.assertEqual(got["backend"], "remote")
        self.assertEqual(got["placement"], "kubernetes")
        self.assertEqual(got["kubernetes_api"], "")  # the pod's own
        self.assertEqual(got["kubernetes_warm_pool"],
                         documents("warm-pool.yaml")[0]["metadata"]["name"])
        self.assertEqual(got["agent_port"], agent["containers"][0]["ports"][0]["containerPort"])
        self.assertEqual(int(got["listen"].rsplit(":", 1)[1]),
                         container["ports"][0]["containerPort"])
        for probe in ("readinessProbe", "livenessProbe"):
            host = {h["name"]: h["value"]
                    for h in container[probe]["httpGet"]["httpHeaders"]}["Host"]
            self.assertEqual(host, "127.0.0.1:" + got["listen"].rsplit(":", 1)[1])


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main(verbosity=2)
