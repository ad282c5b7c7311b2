import fs from 'node:fs';
import { Body, Controller, Get, Inject, Param, Patch, Query, StreamableFile } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  DataDir,
  EmbeddingService,
  embeddingListQuerySchema,
  embeddingPolicySchema,
  type EmbeddingListQuery,
  type EmbeddingPolicy,
} from '@abacus/catalog';
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
    // which lines start models from each version (the owner's view of its name on the embeddings page)
    const used = await this.embeddings.usageOf(page.items);
    return { ...page, items: page.items.map((e) => ({ ...view(e), usedBy: used.get(e.id) ?? [] })) };
  }

  @Get(':ref')
  @ApiOperation({ summary: 'one shared embedding by name@version, name (latest version) or id' })
  async get(@Param('ref') ref: string, @Scope() scope: RequestScope) {
    const e = await this.embeddings.get(ref, scope);
    return { ...view(e), usedBy: await this.embeddings.usage(e) };
  }

  @Patch(':name/policy')
  @Access('engineer')
  @ApiOperation({
    summary: 'who may use (shareWith) and who may update (updatableBy) every version of a name; the owner line only',
  })
  async policy(
    @Param('name') name: string,
    @Body(new ZodValidationPipe(embeddingPolicySchema)) body: EmbeddingPolicy,
    @Scope() scope: RequestScope,
  ) {
    return view(await this.embeddings.setPolicy(name, body, scope));
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
