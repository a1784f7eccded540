"""Platform wheels: when `.ci/package` has put the push-outbox binary at
src/push_outbox/bin/push-outbox, the wheel carries it and is tagged for this platform
(py3-none-<platform>), the way ruff ships its native code. Without the binary the wheel
is pure Python and finds the binary elsewhere (see push_outbox._discovery)."""

from pathlib import Path

from setuptools import Distribution, setup

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]

BUNDLED = Path(__file__).resolve().parent / "src" / "push_outbox" / "bin" / "push-outbox"


class BinaryDistribution(Distribution):
    """Carries a native file, so the wheel is platform-specific and installs into platlib."""

    def has_ext_modules(self) -> bool:
        return BUNDLED.is_file()


class PlatformWheel(bdist_wheel):  # type: ignore[misc]
    def get_tag(self):  # type: ignore[no-untyped-def]
        python, abi, plat = super().get_tag()
        if self.root_is_pure:
            return python, abi, plat
        return "py3", "none", plat


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": PlatformWheel})
