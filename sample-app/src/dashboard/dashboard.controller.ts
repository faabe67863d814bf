import { Controller, Get, Header, Sse, type MessageEvent } from '@nestjs/common';
import { map, type Observable } from 'rxjs';
import { DashboardFeed } from './dashboard-feed.js';
import { DASHBOARD_PAGE } from './dashboard-page.js';

/** `GET /dashboard`: the live page; `GET /dashboard/events`: what feeds it, as server-sent events. */
@Controller('dashboard')
export class DashboardController {
  constructor(private readonly feed: DashboardFeed) {}

  /** One self-contained HTML page (inline CSS and JS, nothing fetched but the event stream). */
  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-store')
  page(): string {
    return DASHBOARD_PAGE;
  }

  /** Each message's `kind` becomes the SSE event name the page listens for. */
  @Sse('events')
  events(): Observable<MessageEvent> {
    return this.feed.stream().pipe(map((message) => ({ type: message.kind, data: message })));
  }
}
