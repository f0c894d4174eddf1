import type { TopicInfo } from '../../src/admin/bus-admin.js';
import { busSection } from '../../src/dashboard/bus-cache-sections.js';

const ctx = { base: '/ops', nonce: 'n', csrf: 'c', readOnly: true, refreshMs: 0, sections: ['bus' as const] };
const topic = (t: Partial<TopicInfo> & { name: string }): { topic: TopicInfo; groups: [] } => ({ topic: { length: 0, groups: 0, deadLetters: 0, ...t }, groups: [] });

describe('the Bus page memory table', () => {
  it("shows each readable topic's log bytes, archive segments and bytes; an estimate is marked; an unreadable topic is left out", () => {
    const page = busSection(
      ctx,
      [
        topic({ name: 'orders', length: 10, logBytes: 1536, archiveSegments: 3, archiveBytes: 8 * 1048576 }),
        topic({ name: 'audit', length: 5, logBytes: 2048, logBytesEstimated: true, archiveSegments: 2 }),
        topic({ name: 'quiet', logBytes: 0, archiveSegments: 0 }),
        topic({ name: 'bad<x>', error: 'EMQ_WRONGTYPE boom', problem: 'unreadable' }),
      ],
      undefined,
    ).text;
    expect(page).toContain('<tr data-topic-memory="orders"><td>orders</td><td class="n" data-log-bytes>1.5 KiB</td><td class="n" data-archive-segments>3</td><td class="n" data-archive-bytes>8.0 MiB</td></tr>');
    // An estimate is marked with ~; an archive whose total is not counted yet says so.
    expect(page).toContain('<td class="n" data-log-bytes>~2.0 KiB</td><td class="n" data-archive-segments>2</td><td class="n" data-archive-bytes>uncounted</td>');
    expect(page).toContain('<tr data-topic-memory="quiet"><td>quiet</td><td class="n" data-log-bytes>0.0 KiB</td><td class="n" data-archive-segments>0</td><td class="n" data-archive-bytes>0</td></tr>');
    expect(page).not.toContain('data-topic-memory="bad');
  });
});
