# heed proxy as a container: a static binary on a distroless base, as a
# non-root user. Configure it with HEED_* variables (HEED_UPSTREAM,
# HEED_PROFILE, HEED_REDIS_URL, HEED_TENANT_HEADER ...), one per flag.
#
#   docker build -t heed .
#   docker run -p 8081:8081 -e HEED_UPSTREAM=https://acme.atlassian.net -e HEED_PROFILE=jira heed
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/heed ./cmd/heed

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/heed /usr/local/bin/heed
USER nonroot:nonroot
ENV HEED_LISTEN=0.0.0.0:8081
EXPOSE 8081
HEALTHCHECK --interval=15s --timeout=6s --start-period=5s --retries=3 \
	CMD ["/usr/local/bin/heed", "proxy", "-healthcheck", "http://127.0.0.1:8081/_heed/healthz"]
ENTRYPOINT ["/usr/local/bin/heed", "proxy"]
