import { createHash } from 'node:crypto';
import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Access } from '../common/access.decorator';

const STYLE = `body{font:14px system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}
.succeeded{color:#0a7b34}.failed{color:#b00020}.running{color:#1a5fb4}.cancelled{color:#777}
#signin input{width:32rem;font:inherit;padding:3px}.err{color:#b00020}[hidden]{display:none}`;

// the key stays in this browser's localStorage and goes out only as a Bearer header to this origin
const SCRIPT = `
const KEY='abacus.apiKey';const $=(s)=>document.querySelector(s);let timer=null;
function auth(){return {authorization:'Bearer '+localStorage.getItem(KEY)};}
function signedOut(msg){clearInterval(timer);timer=null;$('#signin').hidden=false;$('#who').hidden=true;$('#main').hidden=true;$('#signin-error').textContent=msg||'';}
async function whoami(){const r=await fetch('/api/v1/keys/me',{headers:auth()});const b=await r.json();if(!r.ok)throw new Error(b.message||('HTTP '+r.status));return b;}
async function load(){const r=await fetch('/api/v1/experiments?pageSize=50',{headers:auth()});const p=await r.json();
if(r.status===401)return signedOut(p.message);if(!r.ok){$('#load-error').textContent=p.message||('HTTP '+r.status);return;}$('#load-error').textContent='';
const tb=document.querySelector('#t tbody');tb.innerHTML='';for(const e of p.items){const tr=document.createElement('tr');
for(const v of [new Date(e.createdAt).toLocaleString(),e.kind,e.businessLine,e.name,e.status,Math.round(e.progress*100)+'%',e.id]){const td=document.createElement('td');td.textContent=v;if(v===e.status)td.className=v;tr.appendChild(td);}
tb.appendChild(tr);}}
async function start(){if(!localStorage.getItem(KEY))return signedOut('');
try{const me=await whoami();$('#who-name').textContent=me.name+' ('+me.role+'; lines: '+me.lines.join(', ')+')';}catch(e){localStorage.removeItem(KEY);return signedOut(e.message);}
$('#signin').hidden=true;$('#who').hidden=false;$('#main').hidden=false;await load();if(!timer)timer=setInterval(load,3000);}
$('#signin').addEventListener('submit',(ev)=>{ev.preventDefault();const k=$('#key').value.trim();if(!k)return;localStorage.setItem(KEY,k);$('#key').value='';start();});
$('#signout').addEventListener('click',()=>{localStorage.removeItem(KEY);signedOut('');});
start();
`;

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Abacus</title><link rel="icon" href="data:,">
<style>${STYLE}</style></head>
<body><h1>Abacus</h1>
<p>Feature-value experiments. REST API under <a href="/api/v1/health">/api/v1</a>, OpenAPI docs at <a href="/api/docs">/api/docs</a>.</p>
<form id="signin" hidden><label for="key">API key</label> <input id="key" type="password" autocomplete="off" placeholder="abk_..."> <button type="submit">Sign in</button>
<p class="err" id="signin-error"></p><p>Get a key from an admin (<code>abacus keys create</code>), or <code>abacus keys bootstrap</code> on a fresh install.</p></form>
<p id="who" hidden>Signed in as <span id="who-name"></span> <button id="signout" type="button">Sign out</button></p>
<div id="main" hidden><h2>Experiments</h2><p class="err" id="load-error"></p>
<table id="t"><thead><tr><th>created</th><th>kind</th><th>line</th><th>name</th><th>status</th><th>progress</th><th>id</th></tr></thead><tbody></tbody></table></div>
<script>${SCRIPT}</script></body></html>`;

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/** This page's CSP: helmet's defaults, with exactly its own inline script and style allowed by hash. */
export const PAGE_CSP = [
  "default-src 'self'",
  `script-src 'self' ${sha256(SCRIPT)}`,
  "script-src-attr 'none'",
  `style-src 'self' ${sha256(STYLE)}`,
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ');

/** A small experiments page at /; it signs in with an API key. The full web UI comes with its own app. */
@ApiExcludeController()
@Controller()
@Access('public')
export class UiController {
  @Get('/')
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('content-security-policy', PAGE_CSP)
  index(): string {
    return PAGE;
  }
}
