/** The exchange page as HTML (server-rendered, no script: it refreshes itself every 2 s). */
import type { Depth, Trade } from '../engine/engine.types.js';
import { formatUnits, ticksFromWire } from '../engine/money.js';
import type { SealedCandle } from '../market/market.events.js';
import type { Candle } from '../store/exchange.store.js';

/** What the page shows. */
export interface PageData {
  readonly instance: string;
  readonly heldShards: readonly number[];
  readonly books: readonly Depth[];
  readonly trades: readonly Trade[];
  readonly candles: Readonly<Record<string, readonly Candle[]>>;
  /** The minutes sealed last, newest first. */
  readonly sealed: readonly SealedCandle[];
}

const ESC: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** Escapes text for HTML. */
export const esc = (v: unknown): string => String(v).replace(/[&<>"']/g, (c) => ESC[c]);
/** Ticks (a decimal string) in units, exactly. */
const px = (ticks: string): string => formatUnits(ticksFromWire(ticks));
const time = (ms: number): string => new Date(ms).toISOString().slice(11, 23);

function table(head: readonly string[], rows: readonly (readonly unknown[])[], cls = ''): string {
  const th = head.map((h) => `<th>${esc(h)}</th>`).join('');
  const tr = rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('');
  return `<table class="${cls}"><thead><tr>${th}</tr></thead><tbody>${tr || `<tr><td colspan="${head.length}">—</td></tr>`}</tbody></table>`;
}

function book(d: Depth): string {
  const rows = Array.from({ length: Math.max(d.bids.length, d.asks.length) }, (_, i) => [
    d.bids[i]?.orders ?? '',
    d.bids[i]?.qty ?? '',
    d.bids[i] ? px(d.bids[i].priceTicks) : '',
    d.asks[i] ? px(d.asks[i].priceTicks) : '',
    d.asks[i]?.qty ?? '',
    d.asks[i]?.orders ?? '',
  ]);
  return `<section class="book"><h3>${esc(d.symbol)}</h3>${table(['#', 'bid qty', 'bid', 'ask', 'ask qty', '#'], rows)}</section>`;
}

/** Renders the page. */
export function renderPage(p: PageData): string {
  const trades = p.trades.map((t) => [t.id, time(t.at), t.symbol, px(t.priceTicks), t.qty, t.buyAccount, t.sellAccount, t.takerSide]);
  const candles = Object.entries(p.candles).map(
    ([s, cs]) =>
      `<section><h3>${esc(s)} · 1 s</h3>${table(
        ['start', 'open', 'high', 'low', 'close', 'volume', 'trades'],
        cs.slice(-10).map((c) => [time(c.start), px(c.open), px(c.high), px(c.low), px(c.close), c.volume, c.trades]),
      )}</section>`,
  );
  const sealed = p.sealed.map((c) => [c.symbol, time(c.start).slice(0, 5), px(c.open), px(c.high), px(c.low), px(c.close), c.volume, px(c.notionalTicks), c.trades]);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2"><title>EchoMQ exchange</title>
<style>body{font:14px system-ui,sans-serif;margin:1.5rem;color:#222}table{border-collapse:collapse;margin:.3rem 0}
td,th{padding:.15rem .5rem;border-bottom:1px solid #ddd;text-align:right}h3{margin:.8rem 0 .2rem}.row{display:flex;flex-wrap:wrap;gap:1.5rem}</style></head>
<body><h1>EchoMQ exchange</h1>
<p>Instance <b>${esc(p.instance)}</b> · holds shards [${esc(p.heldShards.join(', '))}] · refreshes every 2 s</p>
<h2>Order books</h2><div class="row">${p.books.map(book).join('') || '<p>no orders yet</p>'}</div>
<h2>Recent trades</h2>${table(['trade', 'time', 'symbol', 'price', 'qty', 'buyer', 'seller', 'taker'], trades, 'trades')}
<h2>Candles</h2><div class="row">${candles.join('') || '<p>no trades yet</p>'}</div>
<h2>Sealed minutes</h2><p>Sealed by the <code>seal-1m</code> schedule at second 15 of each minute.</p>
${table(['symbol', 'minute', 'open', 'high', 'low', 'close', 'volume', 'notional', 'trades'], sealed, 'sealed')}
</body></html>`;
}
