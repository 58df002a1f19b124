# Builds the single vigil binary; docker-compose.yml runs it as api and worker.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/vigil ./cmd/vigil

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/vigil /usr/local/bin/vigil
USER nonroot
ENTRYPOINT ["/usr/local/bin/vigil"]
