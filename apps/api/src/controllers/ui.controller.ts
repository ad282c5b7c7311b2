import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Abacus</title>
<style>body{font:14px system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}
.succeeded{color:#0a7b34}.failed{color:#b00020}.running{color:#1a5fb4}.cancelled{color:#777}</style></head>
<body><h1>Abacus</h1>
<p>Feature-value experiments. REST API under <a href="/api/v1/health">/api/v1</a>, OpenAPI docs at <a href="/api/docs">/api/docs</a>.</p>
<h2>Experiments</h2><table id="t"><thead><tr><th>created</th><th>kind</th><th>line</th><th>name</th><th>status</th><th>progress</th><th>id</th></tr></thead><tbody></tbody></table>
<script>
async function load(){const r=await fetch('/api/v1/experiments?pageSize=50');const p=await r.json();
const tb=document.querySelector('#t tbody');tb.innerHTML='';for(const e of p.items){const tr=document.createElement('tr');
for(const v of [new Date(e.createdAt).toLocaleString(),e.kind,e.businessLine,e.name,e.status,Math.round(e.progress*100)+'%',e.id]){const td=document.createElement('td');td.textContent=v;if(v===e.status)td.className=v;tr.appendChild(td);}
tb.appendChild(tr);}}
load();setInterval(load,3000);
</script></body></html>`;

/** A read-only experiments page at /; the full web UI comes with its own app. */
@ApiExcludeController()
@Controller()
export class UiController {
  @Get('/')
  @Header('content-type', 'text/html; charset=utf-8')
  index(): string {
    return PAGE;
  }
}
