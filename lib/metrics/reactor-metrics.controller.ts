import { Get, Header, Inject, Res } from '@nestjs/common';
import { ReactorMetrics } from './reactor-metrics';

/** What the controller needs of the platform's response (Express's and Fastify's both have it). */
interface ResponseWithHeader {
  header(name: string, value: string): unknown;
}

/**
 * Serves the metrics' registry at `GET /<path>`: Prometheus's text format (or OpenMetrics, for a
 * registry of that type), with its content type, uncached. Mounted by
 * `ReactorMetricsModule.forRoot({ controller: true, path })`; to mount it yourself (behind a guard,
 * say), extend it: `@Controller('internal/metrics') @UseGuards(MyGuard) class Metrics extends ReactorMetricsController {}`.
 */
export class ReactorMetricsController {
  constructor(@Inject(ReactorMetrics) private readonly metrics: ReactorMetrics) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  async scrape(@Res({ passthrough: true }) response: ResponseWithHeader): Promise<string> {
    const body = await this.metrics.scrape();
    response.header('Content-Type', this.metrics.registry.contentType);
    return body;
  }
}
