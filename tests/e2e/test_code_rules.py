"""Rules of the source tree that a compiler alone does not keep (issue 9,
item 6): the banned functions are compile errors in src/, and a header
comment never names a function that does not exist.

These read the tree and run gcc; they need no server.
"""
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BANNED = ["sprintf", "vsprintf", "strcpy", "strcat", "atoi", "sscanf", "strtok"]
CALLS = {
    "sprintf": "sprintf(b, \"%d\", 1);",
    "vsprintf": "va_list ap; vsprintf(b, \"x\", ap);",
    "strcpy": "strcpy(b, \"x\");",
    "strcat": "strcat(b, \"x\");",
    "atoi": "(void)atoi(b);",
    "sscanf": "int v; (void)sscanf(b, \"%d\", &v);",
    "strtok": "(void)strtok(b, \",\");",
}


def compile_snippet(body, tmp_path):
    src = tmp_path / "snippet.c"
    src.write_text("#include <stdarg.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
                   "#include <string.h>\nvoid f(char *b) { " + body + " }\n")
    return subprocess.run(["gcc", "-std=c17", "-D_GNU_SOURCE", "-fsyntax-only",
                           "-include", str(REPO / "src/util/banned.h"), str(src)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("func", BANNED)
def test_banned_function_is_a_compile_error(func, tmp_path):
    r = compile_snippet(CALLS[func], tmp_path)
    assert r.returncode != 0
    assert f"sorry_{func}_is_banned" in r.stderr


def test_allowed_functions_still_compile(tmp_path):
    r = compile_snippet("snprintf(b, 4, \"%d\", 1); (void)strtol(b, NULL, 10);"
                        " memcpy(b, \"x\", 2);", tmp_path)
    assert r.returncode == 0, r.stderr


def test_makefile_bans_them_for_every_src_file():
    text = (REPO / "Makefile").read_text()
    assert "-include src/util/banned.h" in text
    assert re.search(r"^\$\(BUILD\)/obj/src/%\.o: CFLAGS \+= \$\(BANNED\)", text, re.M)


COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
SYSTEM_HEADERS = [
    "stdio.h", "stdlib.h", "string.h", "unistd.h", "fcntl.h", "sys/stat.h", "pthread.h",
    "dirent.h", "fnmatch.h", "time.h", "signal.h", "sys/socket.h", "netdb.h", "poll.h",
    "sys/epoll.h", "ftw.h", "curl/curl.h", "jansson.h", "openssl/evp.h",
    "openssl/ssl.h", "expat.h", "zstd.h", "zlib.h", "brotli/encode.h", "duckdb.h",
    "sys/mman.h", "stdatomic.h", "sys/resource.h", "arpa/inet.h", "netinet/in.h",
    "sched.h", "errno.h", "sys/uio.h", "sys/sendfile.h",
]


def identifiers(text):
    return set(re.findall(r"[A-Za-z_]\w*", text))


def test_header_comments_name_only_functions_that_exist():
    code = set()
    comments = []
    for path in sorted((REPO / "src").rglob("*")):
        if path.suffix not in (".c", ".h", ".cc", ".def"):
            continue
        text = path.read_text()
        code |= identifiers(COMMENT.sub(" ", text))
        if path.suffix == ".h":
            for m in COMMENT.finditer(text):
                comments.append((path, text.count("\n", 0, m.start()) + 1, m.group(0)))
    includes = "".join(f"#include <{h}>\n" for h in SYSTEM_HEADERS)
    pp = subprocess.run(["gcc", "-E", "-D_GNU_SOURCE", "-isystem",
                         str(REPO / "third_party/duckdb"), "-x", "c", "-"],
                        input=includes, capture_output=True, text=True, check=True).stdout
    known = code | identifiers(pp)
    missing = []
    for path, line, text in comments:
        # A call form ("name(" or "name()") with a snake_case name is a function
        # reference; code sketches in comments use names that exist too.
        for m in re.finditer(r"\b([a-z][a-z0-9]*_[a-z0-9_]+)\(", text):
            if m.group(1) not in known:
                missing.append(f"{path.relative_to(REPO)}:"
                               f"{line + text.count(chr(10), 0, m.start())}: {m.group(1)}()")
    assert not missing, "header comments name functions that do not exist:\n" + "\n".join(missing)
