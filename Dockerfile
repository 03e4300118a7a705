# One image for every entry point; docker-compose picks the service with `command`.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY migrations ./migrations
COPY src ./src
COPY services ./services
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080
CMD ["node", "--single-threaded-gc", "--max-semi-space-size=32", "--import", "tsx", "services/all-in-one/main.ts"]
