/**
 * Waits for `p` to settle (fulfilled or rejected: the outcome is not wanted here), but at most
 * `ms`. Used where a reply is already on its way (an unblocked blocking read) and a shutdown must
 * not hang on a connection that will never answer.
 */
export async function waitAtMost(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.then(() => undefined, () => undefined), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
