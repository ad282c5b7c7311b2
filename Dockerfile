# api and worker image (CPU runtime). Build: docker compose build
FROM node:20-bookworm
WORKDIR /app
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends g++ make python3 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json .npmrc ./
COPY configs/package.json configs/
COPY apps/api/package.json apps/api/
COPY apps/worker/package.json apps/worker/
COPY apps/cli/package.json apps/cli/
COPY apps/web/package.json apps/web/
COPY libs libs
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build
ENV ABACUS_API_HOST=0.0.0.0 ABACUS_DATA_DIR=/data
VOLUME /data
CMD ["node", "dist/apps/api/src/main.js"]
