# test_install.py - `meson install --destdir` of this build into a temp dir: the programs in
# BINDIR, the browser pages in DATADIR/cardpost/web, the example settings in
# SYSCONFDIR/cardpost, the systemd units in the unit directory; the installed cardpostd
# serves the installed pages (not the source tree's) and passes --check-config on the
# installed example; `systemd-analyze verify` accepts the units and `systemd-analyze security
# --offline=yes` rates cardpost.service "OK" or better (exposure <= 4.0).
# argv: the build directory. env: CARDPOST_SOURCE_ROOT, and CARDPOST_PREFIX, _BINDIR,
# _DATADIR, _SYSCONFDIR, _UNITDIR (from meson).
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (OPERATOR, TEMP_DIRS, Daemon, check, check_problem, free_port,  # noqa: E402
                     run)

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
ROOT = os.environ["CARDPOST_SOURCE_ROOT"]
PREFIX = os.environ["CARDPOST_PREFIX"]


def under(dest, key):
    """The installed path of a meson directory option, inside `dest`."""
    path = os.path.join(PREFIX, os.environ["CARDPOST_" + key])
    return os.path.join(dest, path.lstrip("/"))


DEST = None


def test_meson_install_layout():
    global DEST
    DEST = tempfile.mkdtemp(prefix="cardpost-install-")
    TEMP_DIRS.append(DEST)
    p = subprocess.run(["meson", "install", "-C", BUILD, "--destdir", DEST, "--no-rebuild",
                        "--quiet"], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, "meson install --destdir exits 0 (%s)" % (p.stdout + p.stderr)[-2000:])
    bindir = under(DEST, "BINDIR")
    for prog in ("cardpostd", "cardpost"):
        path = os.path.join(bindir, prog)
        check(os.path.isfile(path) and os.access(path, os.X_OK), "%s is installed in BINDIR" % prog)
    web = os.path.join(under(DEST, "DATADIR"), "cardpost", "web")
    src_web = os.path.join(ROOT, "web")
    cmp = filecmp.dircmp(src_web, web)
    check(sorted(os.listdir(web)) == sorted(os.listdir(src_web)) and not cmp.diff_files,
          "DATADIR/cardpost/web holds the pages of web/ (%r)" % sorted(os.listdir(web)))
    example = os.path.join(under(DEST, "SYSCONFDIR"), "cardpost", "cardpost.conf.example")
    check(filecmp.cmp(example, os.path.join(ROOT, "ops", "cardpost.conf.example"), shallow=False),
          "SYSCONFDIR/cardpost/cardpost.conf.example is ops/cardpost.conf.example")
    units = os.path.join(DEST, os.environ["CARDPOST_UNITDIR"].lstrip("/"))
    for unit in ("cardpost.service", "cardpost-backup.service", "cardpost-backup.timer"):
        check(os.path.isfile(os.path.join(units, unit)), "%s is in the unit directory" % unit)
    text = open(os.path.join(units, "cardpost.service")).read()
    installed = os.path.join(PREFIX, os.environ["CARDPOST_BINDIR"], "cardpostd")
    check("ExecStart=%s --config" % installed in text, "the unit starts the installed cardpostd")
    check(not re.search(r"@[a-z]+@", text), "every @placeholder@ was filled in")
    p = subprocess.run([os.path.join(bindir, "cardpostd"), "--check-config", example],
                       capture_output=True, text=True)
    check(p.returncode == 0, "the installed cardpostd passes the installed example (%s)" % p.stderr)


def test_installed_daemon_serves_installed_pages():
    check(DEST, "installed first")
    web = os.path.join(under(DEST, "DATADIR"), "cardpost", "web")
    marker = "<!-- installed copy %d -->" % os.getpid()
    with open(os.path.join(web, "index.html"), "a") as f:
        f.write(marker + "\n")
    os.environ["CARDPOSTD"] = os.path.join(under(DEST, "BINDIR"), "cardpostd")
    import harness
    harness.CARDPOSTD = os.environ["CARDPOSTD"]
    d = Daemon().start()
    with urllib.request.urlopen("http://127.0.0.1:%d/" % d.port, timeout=10) as r:
        page = r.read().decode()
    check(marker in page, "the installed cardpostd serves DATADIR/cardpost/web/index.html")
    with urllib.request.urlopen("http://127.0.0.1:%d/assets/style.css" % d.port, timeout=10) as r:
        check(r.status == 200, "and its other files")
    d.stop()


MESSAGE = (b"From: someone@example.org\r\nTo: cardpost@cp.example\r\nSubject: hello\r\n"
           b"\r\nhello\r\n")


def inbound(d):
    return d.request("POST", "/v1/mail/inbound", raw=MESSAGE, token=OPERATOR,
                     headers={"Content-Type": "message/rfc822"})


def test_installed_daemon_reads_mail():
    """The installed cardpostd loads its reader of mail, LIBDIR/cardpost/cardpost-mime.so,
    from where it is installed (the message is read: it names no play+ address); a copy of
    the binary alone, without the module, says so with a 503 and reads nothing."""
    check(DEST, "installed first")
    module = os.path.join(DEST, PREFIX.lstrip("/"), os.environ["CARDPOST_LIBDIR"], "cardpost",
                          "cardpost-mime.so")
    check(os.path.isfile(module), "the module is installed in LIBDIR/cardpost (%s)" % module)
    import harness
    harness.CARDPOSTD = os.path.join(under(DEST, "BINDIR"), "cardpostd")
    d = Daemon().start()
    try:
        check_problem(inbound(d), 422, "no_play_address",
                      "the installed cardpostd reads a message with the installed module")
    finally:
        d.stop()
    alone = tempfile.mkdtemp(prefix="cardpost-alone-")
    TEMP_DIRS.append(alone)
    shutil.copy(harness.CARDPOSTD, alone)
    harness.CARDPOSTD = os.path.join(alone, "cardpostd")
    d = Daemon().start()
    try:
        body = check_problem(inbound(d), 503, "mail_reader_missing",
                             "a cardpostd without its module refuses mail")
        check("cardpost-mime.so" in body["detail"], "and names the module (%r)" % body["detail"])
        st, _, _ = d.request("GET", "/readyz")
        check(st == 200, "and serves the rest (readyz %d)" % st)
    finally:
        d.stop()


def exec_start(unit_text, specifiers):
    """The ExecStart= command of a unit as systemd runs it: continuation lines joined, the
    specifiers (%S, %d, %%) replaced, $$ made $, split into words as systemd does (shlex
    quoting is near enough for these units)."""
    import shlex
    text = unit_text.replace("\\\n", " ")
    line = next(ln for ln in text.split("\n") if ln.startswith("ExecStart="))[len("ExecStart="):]
    line = re.sub(r"%(.)", lambda m: specifiers[m.group(1)], line)
    return shlex.split(line.replace("$$", "$"))


def test_units_commands_run():
    """The units' commands, run as systemd would run them but over a temp dir: cardpostd
    starts with the credential's settings and the state directory's database, and the backup
    command writes dated backups there, keeping the newest KEEP."""
    units = os.path.join(DEST, os.environ["CARDPOST_UNITDIR"].lstrip("/"))
    tmp = tempfile.mkdtemp(prefix="cardpost-unitrun-")
    TEMP_DIRS.append(tmp)
    creds, state = os.path.join(tmp, "credentials"), os.path.join(tmp, "state")
    for d in (creds, os.path.join(state, "cardpost"), os.path.join(state, "cardpost-backups")):
        os.makedirs(d)
    example = os.path.join(under(DEST, "SYSCONFDIR"), "cardpost", "cardpost.conf.example")
    # A free port of its own, not the example's 8080: where cardpostd listens shows it read
    # the file.
    port = free_port()
    conf = open(example).read()
    check("listen = 127.0.0.1:8080\n" in conf, "the example listens on 127.0.0.1:8080")
    conf = conf.replace("listen = 127.0.0.1:8080\n", "listen = 127.0.0.1:%d\n" % port)
    token = "unit-test-token-of-at-least-32-characters"
    with open(os.path.join(creds, "cardpost.conf"), "w") as f:
        f.write(conf + "operator_token = %s\n" % token)
    bindir = os.path.join(PREFIX, os.environ["CARDPOST_BINDIR"])
    specs = {"S": state, "d": creds, "%": "%"}
    argv = exec_start(open(os.path.join(units, "cardpost.service")).read(), specs)
    argv[0] = argv[0].replace(bindir, under(DEST, "BINDIR"))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline().decode()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+) \(database (.*)\)", line)
        check(m and m.group(2) == os.path.join(state, "cardpost", "cardpost.db"),
              "cardpost.service's command starts cardpostd on the state directory's database "
              "(%r %r)" % (line, argv))
        check(int(m.group(1)) == port, "on the credential's listen port %d (%r)" % (port, line))
        with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=10) as r:
            check(r.status == 200, "and it is ready")
        # The credential's operator_token is the operator's (an admin route answers to it).
        rq = urllib.request.Request("http://127.0.0.1:%d/v1/admin/stats" % port,
                                    headers={"Authorization": "Bearer " + token})
        try:
            st = urllib.request.urlopen(rq, timeout=10).status
        except urllib.error.HTTPError as e:
            st = e.code
        check(st == 200, "the credential's operator_token is the operator's (%d)" % st)
        text = open(os.path.join(units, "cardpost-backup.service")).read()
        argv = exec_start(text, specs)
        script = argv[-1].replace(bindir + "/", under(DEST, "BINDIR") + "/")
        env = dict(os.environ, KEEP="2")
        names = []
        for i in range(3):
            if i:
                time.sleep(1.1)  # the names are dated to the second
            p = subprocess.run(argv[:-1] + [script], env=env, capture_output=True, text=True,
                               timeout=60)
            check(p.returncode == 0, "cardpost-backup.service's command exits 0 (%s)" % p.stderr)
            names = sorted(os.listdir(os.path.join(state, "cardpost-backups")))
        check(len(names) == 2 and all(re.fullmatch(r"cardpost-\d{8}T\d{6}Z\.db", n) for n in names),
              "three backups, the newest KEEP=2 kept, dated names (%r)" % names)
    finally:
        proc.terminate()
        proc.wait(10)


def test_systemd_units():
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        print("SKIP systemd-analyze is missing (Debian package systemd): units not checked")
        return
    # The units name the final paths (PREFIX/BINDIR/cardpostd); checked here with those
    # pointed at the DESTDIR copy, so that verify finds the programs it checks.
    units = os.path.join(DEST, os.environ["CARDPOST_UNITDIR"].lstrip("/"))
    tmp = tempfile.mkdtemp(prefix="cardpost-units-")
    TEMP_DIRS.append(tmp)
    bindir = os.path.join(PREFIX, os.environ["CARDPOST_BINDIR"])
    names = ["cardpost.service", "cardpost-backup.service", "cardpost-backup.timer"]
    for name in names:
        text = open(os.path.join(units, name)).read()
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text.replace(bindir + "/", under(DEST, "BINDIR") + "/"))
    p = subprocess.run([analyze, "verify"] + [os.path.join(tmp, n) for n in names],
                       capture_output=True, text=True, cwd=tmp, timeout=120)
    check(p.returncode == 0 and not p.stderr.strip(),
          "systemd-analyze verify accepts the units (%d %s)" % (p.returncode, p.stderr))
    for name, most in (("cardpost.service", 4.0), ("cardpost-backup.service", 4.0)):
        p = subprocess.run([analyze, "security", "--offline=yes", os.path.join(tmp, name)],
                           capture_output=True, text=True, cwd=tmp, timeout=120)
        m = re.search(r"Overall exposure level for %s: ([0-9.]+) (\w+)" % re.escape(name),
                      p.stdout)
        check(m, "systemd-analyze security rates %s (%s)" % (name, p.stdout[-500:] + p.stderr))
        level, word = float(m.group(1)), m.group(2)
        print("  %s: exposure %.1f %s" % (name, level, word))
        check(level <= most and word in ("OK", "SAFE"),
              "%s is %s with exposure %.1f (at most %.1f, OK or better)"
              % (name, word, level, most))


if __name__ == "__main__":
    run([test_meson_install_layout, test_installed_daemon_serves_installed_pages,
         test_installed_daemon_reads_mail,
         test_units_commands_run, test_systemd_units])
