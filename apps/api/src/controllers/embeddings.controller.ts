import fs from 'node:fs';
import { Controller, Get, Inject, Param, Query, StreamableFile } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { DataDir, EmbeddingService, embeddingListQuerySchema, type EmbeddingListQuery } from '@abacus/catalog';
import { ZodValidationPipe, type RequestScope } from '@abacus/core';
import type { SharedEmbeddingEntity } from '@abacus/data';
import { Access } from '../common/access.decorator';
import { Scope } from '../common/scope.decorator';

/** what the API shows of a shared embedding: everything but where its file lies on the server */
function view(e: SharedEmbeddingEntity) {
  const { file: _file, originKey: _origin, ...rest } = e;
  return { ...rest, ref: `${e.name}@${e.version}` };
}

/** Shared embeddings (DataBank): listed, looked up by `name@version`, exported as safetensors. */
@ApiTags('embeddings')
@ApiBearerAuth('api-key')
@Controller('embeddings')
@Access('viewer')
export class EmbeddingsController {
  constructor(
    @Inject(EmbeddingService) private readonly embeddings: EmbeddingService,
    @Inject(DataDir) private readonly dataDir: DataDir,
  ) {}

  @Get()
  async list(@Query(new ZodValidationPipe(embeddingListQuerySchema)) q: EmbeddingListQuery, @Scope() scope: RequestScope) {
    const page = await this.embeddings.list(scope, q);
    return { ...page, items: page.items.map(view) };
  }

  @Get(':ref')
  @ApiOperation({ summary: 'one shared embedding by name@version, name (latest version) or id' })
  async get(@Param('ref') ref: string, @Scope() scope: RequestScope) {
    return view(await this.embeddings.get(ref, scope));
  }

  @Get(':ref/safetensors')
  @ApiOperation({
    summary: 'the embedding tables as safetensors: embedding.<slot> [rows, dim], wide.<slot>, id spaces in the metadata',
  })
  async export(@Param('ref') ref: string, @Scope() scope: RequestScope): Promise<StreamableFile> {
    const e = await this.embeddings.get(ref, scope);
    const file = await this.dataDir.pull(e.file);
    return new StreamableFile(fs.createReadStream(file), {
      type: 'application/octet-stream',
      disposition: `attachment; filename="${e.name}@${e.version}.safetensors"`,
      length: e.bytes,
    });
  }
}
