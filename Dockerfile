FROM python:3.11-slim
ARG EXTRAS=""
WORKDIR /srv/forgetmap
COPY . .
RUN pip install --no-cache-dir -e ".${EXTRAS:+[$EXTRAS]}"
EXPOSE 8000
