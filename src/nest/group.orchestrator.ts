import { Injectable } from '@nestjs/common';

/** Starts one consumer-group loop per `@OnEvent` after bootstrap and stops them before shutdown. */
@Injectable()
export class GroupOrchestrator {}
