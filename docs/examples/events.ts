import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { filter } from 'rxjs';
import { LockService } from 'nest-quorum-lock';

@Injectable()
export class LockAudit implements OnModuleInit {
  private readonly logger = new Logger('LockAudit');

  constructor(private readonly locks: LockService) {}

  onModuleInit(): void {
    this.locks.events$
      .pipe(filter((e) => e.type === 'lost' || e.type === 'node-down' || e.type === 'node-abstaining'))
      .subscribe((e) => this.logger.warn(`${e.type} ${e.node ?? e.resources.join(',')} ${e.reason ?? ''}`));
  }
}
