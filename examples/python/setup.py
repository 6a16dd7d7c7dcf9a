"""Builds the sam3h package (metadata: pyproject.toml) from this source tree: the version is
sam3.h's SAM3_VERSION_STRING, and the wheel bundles the libsam3.so that `make lib` built at the top
of the repository ($SAM3_LIB: another one), next to sam3h/__init__.py, which loads it from there.

    make lib && pip install --no-build-isolation ./examples/python

The wheel is tagged for this platform (it holds a native library). Building refuses a libsam3.so
of another version than sam3.h's, or one older than sam3.h (run `make lib` again). Intermediate
files go to build/python/ at the top, not into this folder."""
import ctypes
import os
import re

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HEADER = os.path.join(ROOT, "sam3.h")


def sam3_version():
    if not os.path.isfile(HEADER):
        raise SystemExit("sam3h: no %s: build the package from a sam3.h source tree (examples/python)" % HEADER)
    with open(HEADER, encoding="utf-8") as f:
        m = re.search(r'#define SAM3_VERSION_STRING "([0-9.]+)"', f.read())
    if not m:
        raise SystemExit("sam3h: no SAM3_VERSION_STRING in %s" % HEADER)
    return m.group(1)


def libsam3(version):
    """The libsam3.so to bundle, checked: it loads, and it is this sam3.h's."""
    given = os.environ.get("SAM3_LIB")
    lib = os.path.abspath(given or os.path.join(ROOT, "build", "libsam3.so"))
    if not os.path.isfile(lib):
        raise SystemExit("sam3h: no %s: run `make lib` at the top of the sam3.h repository first (or set SAM3_LIB)" % lib)
    if not given and os.path.getmtime(lib) < os.path.getmtime(HEADER):
        raise SystemExit("sam3h: %s is older than sam3.h: run `make lib` again" % lib)
    fn = ctypes.CDLL(lib).sam3_version_string
    fn.restype = ctypes.c_char_p
    have = fn().decode()
    if have != version:
        raise SystemExit("sam3h: %s is libsam3 %s, sam3.h is %s: run `make lib` again" % (lib, have, version))
    return lib


class BuildPy(build_py):
    """build_py, plus libsam3.so copied into the package."""

    def run(self):
        super().run()
        self.copy_file(libsam3(self.distribution.get_version()), os.path.join(self.build_lib, "sam3h", "libsam3.so"))


class NativeDistribution(Distribution):
    def has_ext_modules(self):
        return True  # a platform wheel: it carries libsam3.so


BUILD = os.path.join(ROOT, "build", "python")
os.makedirs(BUILD, exist_ok=True)
setup(version=sam3_version(), cmdclass={"build_py": BuildPy}, distclass=NativeDistribution, zip_safe=False,
      options={"build": {"build_base": os.path.join(BUILD, "build")}, "egg_info": {"egg_base": BUILD}})
