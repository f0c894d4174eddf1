import { Injectable } from '@nestjs/common';

/** Collects `@OnEvent` methods at module init. No I/O happens here. */
@Injectable()
export class EventExplorer {}
