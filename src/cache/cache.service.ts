import type { EchoMqConnection } from '../protocol/connection.js';
import type { CacheOptions } from './cache.types.js';

/** The coherent L1/L2 cache. (Being written.) */
export class CacheService {
  constructor(
    protected readonly conn: EchoMqConnection,
    protected readonly options: CacheOptions = {},
  ) {}
}
