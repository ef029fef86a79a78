/**
 * How long /healthz keeps a client waiting while some work runs. Test servers share the test's
 * event loop, so a stall that begins between two probes also delays the next probe's timer: each
 * latency is counted from the moment the probe was due, not from when its request went out, or
 * such a stall would go unseen.
 */
export async function probeHealthz(baseUrl: string, work: Promise<unknown>, intervalMs = 20): Promise<number[]> {
  let done = false;
  const settled = work.finally(() => {
    done = true;
  });
  const latencies: number[] = [];
  while (!done) {
    const due = performance.now() + intervalMs;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    const response = await fetch(`${baseUrl}/healthz`);
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`/healthz answered ${response.status}`);
    latencies.push(performance.now() - due);
  }
  await settled;
  return latencies;
}
