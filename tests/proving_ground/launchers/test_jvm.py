"""The soak's heap gauge against a real JVM."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kafka_share_eos.proving_ground.launchers.jvm import _java, heap_live_mib

HOLDER = """
public class Holder {
    static byte[] kept;
    public static void main(String[] args) throws Exception {
        kept = new byte[48 << 20];
        for (int i = 0; i < 64; i++) { byte[] garbage = new byte[4 << 20]; garbage[0] = 1; }
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(600_000);
    }
}
"""


def test_the_live_heap_counts_what_is_kept_and_not_the_garbage(tmp_path: Path) -> None:
    source = tmp_path / "Holder.java"
    source.write_text(HOLDER)
    java = _java()
    assert java is not None
    holder = subprocess.Popen([str(java), "-Xmx512m", "-Xms512m", str(source)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        live = heap_live_mib(holder.pid)
        assert live is not None
        # 48 MiB kept; the 256 MiB of garbage is gone after the collection the gauge asks for.
        assert 48 <= live < 48 + 32, live
    finally:
        holder.kill()
        holder.wait()
    assert heap_live_mib(holder.pid) is None
