"""The conformance build's CPU flags (runs in ``make test``: it builds nothing)."""

from __future__ import annotations

from tests.conformance.provision import cpu_flags

# A virtual CPU that lists AMX and AVX-512 (which it may trap on) beside the usual extensions.
CPUINFO = (
    "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\n"
    "flags\t\t: fpu sse4_2 avx f16c fma bmi2 avx2 avx512f avx512_fp16 amx_tile amx_int8\n"
)


def test_the_build_is_portable_with_the_listed_extensions_only() -> None:
    flags = cpu_flags(CPUINFO)
    assert flags[0] == "-DGGML_NATIVE=OFF"  # never -march=native
    assert set(flags[1:]) == {f"-DGGML_{x}=ON" for x in ("AVX", "AVX2", "FMA", "F16C", "BMI2")}
    assert not [f for f in flags if "AVX512" in f or "AMX" in f]


def test_a_cpu_without_avx_gets_the_baseline_build() -> None:
    assert cpu_flags("flags\t\t: fpu sse sse2 sse4_1\n") == ["-DGGML_NATIVE=OFF"]
    assert cpu_flags("") == ["-DGGML_NATIVE=OFF"]  # no /proc/cpuinfo (another OS)
