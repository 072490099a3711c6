"""``nncts certify`` (a certification bundle of one driver) and ``nncts verify BUNDLE``.

``nncts certify --driver NAME [--out DIR] [--quick] [--driver-process] [--modes default|all]
[--fuzz-seconds S] [--driver-coverage] [--profile P] [--baseline F] [--retries N] [--jobs N] [--suite-timeout S]
[--skip SUITE] [--archive] [--sign-key KEY]`` runs every suite (:mod:`nncts.certify_suites`) as a subprocess
into ``DIR/results/<suite>/`` and writes the bundle: ``environment.json`` and ``driver.json``
(:mod:`nncts.certify_facts`), ``checksums.json`` (the test content the run used),
``verdict.json``, the fuzzer's page ``results/fuzz/index.html`` (:func:`reports.verdict.write_fuzz_page`),
``report/`` (one report over the suites, the verdict on top: :func:`reports.run.write_run_report`),
and ``MANIFEST.sha256`` last (:mod:`nncts.bundle`); with ``--sign-key`` also
``SIGNER`` (before the manifest, which lists it) and ``MANIFEST.sha256.sig`` (after it:
:mod:`nncts.signing`); with ``--archive`` also ``DIR.tar.gz``. Exit 0 when certified, and for a
quick run whose every suite passed (a quick run is never certified); 1 otherwise; 2 for bad
options (one line, before any suite runs: a key that does not load, ``--driver-process``
without the ``remote`` extra, a driver that fails to load for a missing module, such as
``onnxruntime`` without the ``engine`` extra).

The verdict: ``passed`` when every required suite ran and passed (exit 0, no failed test or
unexpected pass, no inaccurate or failed MLTS model, no fuzz finding). Required: the CTS, the
VTS, the random graphs, the fuzzer, and the MLTS when the ``mlts`` extra is installed (without
it the MLTS is recorded as not run with the reason, and does not count). The precision sweeps
run, and are in the bundle and its report, but count only when the ``--profile`` file names
them (``suites = ["precision"]``: :mod:`harness.requirements`). The ``scope``
(:func:`run_scope`): ``full``, or ``quick`` (``--quick``), or ``partial`` (a suite left out with
``--skip``, a fuzzing budget under :data:`DEFAULT_FUZZ_SECONDS`). ``certified`` only when it
passed and the scope is full; the ``verdict`` text is ``certified``, ``not certified``, or
``not certified (quick run)`` / ``not certified (partial run)``, and ``reasons`` say why (the
scope's reasons first, then one line per suite that failed or did not run).

``nncts verify BUNDLE [--public-key PUB]`` (a bundle directory or its ``.tar.gz``) checks it
under :func:`nncts.bundle.verify`'s rules and limits: exit 0 and ``bundle OK: N files, verdict
...`` (``not certified (quick run)`` for a quick run; the reasons of a verdict other than
certified indented below it), then a ``signature:``
line: unsigned, signed by a fingerprint not checked (no ``--public-key``), or good. Exit 1
naming each refused, altered, missing or unlisted file, and with ``--public-key`` when the
signature does not match that key and the manifest (``signature does not match``) or the
bundle is unsigned; exit 2 (one line) when BUNDLE is not a bundle or PUB is not a public key.
Every string from the bundle is printed through :func:`nncts.bundle.printable`.

``nncts keygen DIR`` writes a signing key pair (:func:`nncts.signing.keygen`) and prints the
paths and the fingerprint; exit 2 (one line) when a key file exists there already.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from harness.expectations import load_baseline
from harness.requirements import load_profile
from harness import suites as table
from harness.suites import QUICK_CORPUS, QUICK_FUZZ_SECONDS, QUICK_K
from runtime.drivers.code_coverage import coverage_missing
from runtime.remote.client import is_remote_spec, remote_extra_missing

from . import certify_facts, certify_suites, signing
from .bundle import MANIFEST, SIGNATURE, NotABundle, printable, tree_digest, verify, write_archive
from .certify_suites import SUITES
from .preflight import check_driver, is_factory_spec, usage_exit

DEFAULT_FUZZ_SECONDS = 60
#: Most verdict reasons ``nncts verify`` prints.
MAX_REASONS_SHOWN = 20
#: A driver that fails to load with one of these is missing a module (an extra such as
#: ``engine``; its message names it): certify refuses before any suite, exit 2.
MISSING_MODULE = ("ImportError", "ModuleNotFoundError")


def _check(args) -> None:
    """Every option of ``nncts certify`` checked before any suite runs. Raises ValueError
    (one line, naming the option)."""
    if is_factory_spec(args.driver) and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())   # as the suites' `python -m` sees module:factory drivers
    check_driver(args.driver)
    if (args.driver_process or is_remote_spec(args.driver)) and (missing := remote_extra_missing()):
        raise ValueError(f"--driver-process: {missing}")
    if getattr(args, "driver_coverage", False) and (missing := coverage_missing()):
        raise ValueError(f"--driver-coverage: {missing}")
    for option, value, low in (("--fuzz-seconds", args.fuzz_seconds, 1), ("--retries", args.retries, 0),
                               ("--jobs", args.jobs, 1)):
        if value is not None and value < low:
            raise ValueError(f"{option}: must be at least {low}, got {value}")
    if args.suite_timeout is not None and not args.suite_timeout > 0:
        raise ValueError(f"--suite-timeout: must be a positive number of seconds, got {args.suite_timeout:g}")
    try:
        load_profile(args.profile)
    except ValueError as e:
        raise ValueError(f"--profile: {e}") from None
    if args.baseline:
        try:
            load_baseline(args.baseline)
        except ValueError as e:
            raise ValueError(f"--baseline: {e}") from None
    if args.sign_key is not None:
        try:
            args.signing_key = signing.load_private_key(args.sign_key)
        except ValueError as e:
            raise ValueError(f"--sign-key: {e}") from None
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {out}: exists and is not an empty directory; choose another or remove it")


def _missing_module(facts: dict) -> str:
    """The first error of the driver's facts (:func:`nncts.certify_facts.driver_facts`: its
    load error, or a getter's ``error: ...``) that is one of :data:`MISSING_MODULE`; "" when
    none is."""
    for key, value in facts.items():
        error = value if key == "load_error" else value[len("error: "):] \
            if isinstance(value, str) and value.startswith("error: ") else ""
        if any(f"{kind}:" in error for kind in MISSING_MODULE):
            return error
    return ""


def _write_json(path: Path, doc) -> None:
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _run_suites(args, results: Path) -> tuple[list, dict]:
    """Every suite in order (skipped ones and an unavailable MLTS recorded as not run);
    returns the results and the checksums of the fuzz seed corpus the run used (if any)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="nncts-fuzz-seeds-") as tmp:
        seeds = None if args.quick else Path(tmp)
        for name in SUITES:
            if name in args.skip:
                out.append(certify_suites.not_run(name, "left out with --skip"))
            elif name == "mlts" and certify_suites.mlts_unavailable():
                out.append(certify_suites.not_run(name, certify_suites.mlts_unavailable()))
            else:
                out.append(certify_suites.run_suite(args, name, results, seeds if name == "fuzz" else None))
        if seeds is not None and any(seeds.iterdir()):
            return out, {"fuzz seeds": {"path": "(generated by python -m fuzz from the corpus; not kept)",
                                        **tree_digest(seeds)}}
    return out, {}


def run_scope(args) -> tuple[str, list[str]]:
    """The scope of a certification with the certify options ``args`` (quick, skip,
    fuzz_seconds) and why it is not full: ``("full", [])``, ``("quick", [...])`` for
    ``--quick`` (whatever else), or ``("partial", [...])`` for suites left out with ``--skip``
    or a fuzzing budget under :data:`DEFAULT_FUZZ_SECONDS`. Only a full run can be certified."""
    why = []
    if args.quick:
        why.append(f"quick run: --quick ran a CI-sized selection (CTS and VTS: {QUICK_CORPUS.name} models matching "
                   f"{QUICK_K!r}; one random-graph seed; {args.fuzz_seconds} s of fuzzing; one MLTS model); "
                   f"only a full run can be certified")
    why += [f"partial run: {name} left out with --skip" for name in args.skip]
    if not args.quick and args.fuzz_seconds < DEFAULT_FUZZ_SECONDS:
        why.append(f"partial run: --fuzz-seconds {args.fuzz_seconds}, under the full run's {DEFAULT_FUZZ_SECONDS} s")
    return ("quick" if args.quick else "partial" if why else "full"), why


def verdict(suites: list, args) -> dict:
    """The verdict document from the suite results: ``passed`` (every required suite ran and
    passed), ``scope`` and ``scope_reasons`` (:func:`run_scope`), ``certified`` (passed, full
    scope), ``verdict`` (text), ``reasons`` (the scope's, then a line per suite that failed or
    did not run) and every listed failure. A suite the table does not require
    (:attr:`harness.suites.SuiteSpec.required`: the precision sweeps) counts only when the
    profile's ``suites`` names it; it is listed with its ``required`` flag either way."""
    scope, scope_reasons = run_scope(args)
    reasons, failures = list(scope_reasons), []
    blocking = False
    wanted = load_profile(args.profile).suites
    for s in suites:
        s.required = s.suite in wanted or table.suite(s.suite).required
        if s.status == "passed":
            continue
        optional = s.status == "not run" and s.suite == "mlts" and "left out" not in s.reason
        blocking |= not optional and s.required
        detail = s.reason or f"{s.failures_total} failing"
        reasons.append(f"{s.suite}: {s.status}: {detail}" + (" (not required: MLTS unavailable)" if optional else "")
                       + ("" if s.required else f" (not required: profile {args.profile} does not name it)"))
        failures += [dict(f, suite=s.suite) for f in s.failures]
    certified = not blocking and scope == "full"
    text = "certified" if certified else "not certified" if scope == "full" else f"not certified ({scope} run)"
    return {"certified": certified, "verdict": text, "passed": not blocking, "scope": scope,
            "scope_reasons": scope_reasons, "driver": args.driver, "out_of_process": args.driver_process,
            "driver_coverage": getattr(args, "driver_coverage", False), "profile": args.profile,
            "baseline": args.baseline, "quick": args.quick, "modes": args.modes, "fuzz_seconds": args.fuzz_seconds,
            "suites": [s.as_dict() for s in suites], "reasons": reasons, "failures": failures}


def _report(bundle: Path, doc: dict, driver: dict) -> dict:
    """The unified report of the bundle's suites under ``report/``; returns its paths or the
    error (a bundle whose suites all failed to write results has no report)."""
    from reports.run import write_run_report
    meta = {"verdict": doc["verdict"], "scope": doc["scope"], "driver": doc["driver"],
            "driver name": driver.get("name"), "driver version": driver.get("version"),
            "feature level": driver.get("feature_level"), "profile": doc["profile"]}
    try:
        paths = write_run_report([bundle], bundle / "report", f"nncts certification: driver {doc['driver']}", meta)
    except (ValueError, OSError) as e:
        return {"error": " ".join(str(e).split())}
    return {"paths": [p.relative_to(bundle).as_posix() for p in paths]}


def _certify(args, parser) -> int:
    """``nncts certify``: see the module docstring."""
    if args.fuzz_seconds is None:
        args.fuzz_seconds = QUICK_FUZZ_SECONDS if args.quick else DEFAULT_FUZZ_SECONDS
    try:
        _check(args)
    except ValueError as e:
        usage_exit("nncts certify", e)
    start = time.monotonic()
    driver = certify_facts.driver_facts(args.driver, args.driver_process)
    if missing := _missing_module(driver):
        usage_exit("nncts certify", f"--driver {args.driver}: {missing}")
    bundle = Path(args.out).resolve()
    (bundle / "results").mkdir(parents=True, exist_ok=True)
    _write_json(bundle / "environment.json", certify_facts.environment([Path(sys.argv[0]).name, *sys.argv[1:]]))
    _write_json(bundle / "driver.json", driver)
    print(f"certify: driver {args.driver}: {driver.get('name', '?')} {driver.get('version', '')}, "
          f"feature level {driver.get('feature_level', '?')}; bundle {bundle}", flush=True)
    suites, seed_sums = _run_suites(args, bundle / "results")
    _write_json(bundle / "checksums.json", {**certify_facts.content_checksums(), **seed_sums})
    doc = verdict(suites, args)
    _write_json(bundle / "verdict.json", doc)   # the fuzz page and the report read it
    from reports.verdict import write_fuzz_page
    write_fuzz_page(bundle)
    doc["report"] = _report(bundle, doc, driver)
    doc["seconds"] = round(time.monotonic() - start, 1)
    _write_json(bundle / "verdict.json", doc)
    key = getattr(args, "signing_key", None)
    signing.seal(bundle, key)
    print(f"certify: verdict: {doc['verdict'].upper()} in {doc['seconds']:.0f} s"
          + "".join(f"\n  {r}" for r in doc["reasons"])
          + ("\n  every suite passed its quick selection (exit 0)"
             if doc["scope"] == "quick" and doc["passed"] else ""))
    if key is None:
        print(f"bundle: {bundle} (unsigned; check it with: nncts verify {bundle})")
    else:
        print(f"bundle: {bundle} (signed by {signing.fingerprint(key.public_key())}; check it with: "
              f"nncts verify {bundle} --public-key <its nncts-signing.pub>)")
    if args.archive:
        print(f"archive: {write_archive(bundle)}")
    return 0 if doc["certified"] or (doc["scope"] == "quick" and doc["passed"]) else 1


def _verdict_lines(check) -> list[str]:
    """``verdict <verdict>`` and the indented reasons of ``verdict.json`` (read only when the
    manifest covers it and its digest matched), unescaped."""
    try:
        doc = json.loads(check.verdict_text) if check.verdict_text is not None else None
    except (ValueError, RecursionError):  # not JSON, or nested past Python's recursion limit
        doc = "unreadable"
    if not isinstance(doc, dict):
        return [f"verdict unknown ({'no verdict.json' if doc is None else 'verdict.json is not a JSON object'})"]
    reasons = doc.get("reasons") if isinstance(doc.get("reasons"), list) else []
    text = doc.get("verdict", "unknown (verdict.json has no verdict)")
    if "scope" not in doc and doc.get("quick") is True and text == "certified":   # a bundle from before scopes
        text = "not certified (quick run; its verdict.json, from before only full runs were certified, says certified)"
    lines = [f"verdict {text}"]
    lines += [f"  {r}" for r in reasons[:MAX_REASONS_SHOWN]]
    if len(reasons) > MAX_REASONS_SHOWN:
        lines.append(f"  ... and {len(reasons) - MAX_REASONS_SHOWN} more reasons in verdict.json")
    return lines


def _signature(check, public_key, public_key_path) -> tuple[bool, str]:
    """Whether the signature passes (always without a ``public_key``), and the line saying so."""
    signer = (check.signer_text or "").strip() or "an unknown key (no SIGNER file the manifest covers)"
    if public_key is None:
        if check.signature is None:
            return True, "signature: none (the bundle is unsigned)"
        return True, f"signature: signed by {signer} (not checked: pass --public-key)"
    given = signing.fingerprint(public_key)
    if check.signature is None:
        return False, f"bundle is unsigned: no {SIGNATURE}, and --public-key {public_key_path} was given"
    if check.manifest is None or not signing.signature_matches(check.manifest, check.signature, public_key):
        return False, (f"signature does not match: {SIGNATURE} is not the signature of this {MANIFEST} by the "
                       f"key {given} (--public-key {public_key_path}; the bundle names {signer})")
    if check.signer_text is not None and signer != given:
        return False, f"signature does not match: the key {given} signed it, but its SIGNER names {signer}"
    return True, f"signature: good, signed by {given} (--public-key {public_key_path})"


def _verify(args, parser) -> int:
    """``nncts verify BUNDLE [--public-key PUB]``: see the module docstring."""
    try:
        public_key = None if args.public_key is None else signing.load_public_key(args.public_key)
        check = verify(args.bundle)
    except (NotABundle, ValueError) as e:
        usage_exit("nncts verify", printable(e))
    except OSError as e:
        usage_exit("nncts verify", printable(f"{args.bundle}: cannot read it: {e}"))
    signed, signature_line = _signature(check, public_key, args.public_key)
    if check.ok and signed:
        verdict_line, *reasons = _verdict_lines(check)
        for line in [f"bundle OK: {len(check.listed)} files, {verdict_line}", *reasons, signature_line]:
            print(printable(line))
        return 0
    for kind in ("refused", "altered", "missing", "unlisted"):
        for rel in getattr(check, kind):
            print(printable(f"{kind}: {rel}"))
    if not signed:
        print(printable(signature_line))
    if check.compared:
        summary = (f"{len(check.altered)} altered, {len(check.missing)} missing, {len(check.unlisted)} unlisted, "
                   f"{len(check.refused)} refused file(s) against {MANIFEST} ({len(check.listed)} listed)")
    else:
        summary = f"{len(check.refused)} refused file(s); the files were not compared with {MANIFEST}"
    print(f"bundle NOT OK: {summary}" + ("" if signed else f"; {signature_line.split(':')[0]}"))
    return 1


def _keygen(args, parser) -> int:
    """``nncts keygen DIR``: see the module docstring."""
    try:
        private, public, fingerprint = signing.keygen(args.directory)
    except OSError as e:
        usage_exit("nncts keygen", e if e.errno is None else f"{args.directory}: cannot write the key pair: {e}")
    print(f"private key: {private} (mode 0600: keep it secret; nncts certify --sign-key {private})")
    print(f"public key: {public} (give it to whoever verifies: nncts verify BUNDLE --public-key {public})")
    print(f"fingerprint: {fingerprint}")
    return 0


def add_parsers(sub) -> None:
    """Add ``certify`` and ``verify`` to the nncts parser's subparsers ``sub`` (each with
    ``set_defaults(handler=...)``; a handler takes (args, parser) and returns the exit code)."""
    c = sub.add_parser("certify", help="run every suite against a driver and write a certification bundle "
                                       "(results, environment, driver, checksums, report, verdict, manifest)")
    c.add_argument("--driver", required=True, help="bundled name, entry point in group nncts.drivers, or "
                                                   "module:factory")
    c.add_argument("--out", default="nncts-bundle", metavar="DIR",
                   help="the bundle directory (new or empty; default nncts-bundle)")
    c.add_argument("--quick", action="store_true", help="a CI-sized selection of every suite (seconds, not minutes)")
    c.add_argument("--driver-process", action="store_true", help="every suite runs the driver in its own process")
    c.add_argument("--driver-coverage", action="store_true",
                   help="record which lines and branches of the driver's own Python source each pytest suite "
                        "reaches (coverage.py): each suite's figures in verdict.json and the report")
    c.add_argument("--modes", choices=("default", "all"), default="default",
                   help="CTS execution modes: default (each axis value alone) or all (the full cross product)")
    c.add_argument("--fuzz-seconds", type=int, default=None, metavar="S",
                   help=f"fuzzing budget (default {DEFAULT_FUZZ_SECONDS}; "
                        f"{QUICK_FUZZ_SECONDS} with --quick)")
    c.add_argument("--profile", default="feature-level",
                   help="which declined tests fail: feature-level (default), none, or a profile file")
    c.add_argument("--baseline", default=None, metavar="FILE", help="known failures (TOML), passed to every suite")
    c.add_argument("--retries", type=int, default=0, metavar="N", help="re-run a failing test up to N times")
    c.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="pytest-xdist workers per suite (default: every core, as nncts cts; 1: one worker)")
    c.add_argument("--suite-timeout", type=float, default=None, metavar="S",
                   help="seconds one suite may take before it is killed and failed (default: no limit)")
    c.add_argument("--skip", action="append", default=[], choices=SUITES, metavar="SUITE",
                   help=f"leave a suite out ({', '.join(SUITES)}; repeatable): the bundle is then not certified")
    c.add_argument("--archive", action="store_true", help="also write DIR.tar.gz")
    c.add_argument("--sign-key", default=None, metavar="KEY",
                   help="sign the bundle's manifest with this private key (nncts keygen writes one): "
                        "MANIFEST.sha256.sig, and SIGNER with its fingerprint")
    c.set_defaults(handler=_certify)
    v = sub.add_parser("verify", help="check a certification bundle (directory or .tar.gz) against its "
                                      "MANIFEST.sha256 (refused, altered, missing and unlisted files) and, with "
                                      "--public-key, its signature")
    v.add_argument("bundle", metavar="BUNDLE")
    v.add_argument("--public-key", default=None, metavar="PUB",
                   help="check the bundle's signature with this public key (exit 1 when it does not match or "
                        "the bundle is unsigned)")
    v.set_defaults(handler=_verify)
    k = sub.add_parser("keygen", help="write an Ed25519 key pair for signing bundles (nncts certify --sign-key): "
                                      "DIR/nncts-signing.key (0600) and DIR/nncts-signing.pub")
    k.add_argument("directory", metavar="DIR")
    k.set_defaults(handler=_keygen)
