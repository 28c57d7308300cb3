FROM python:3.11-slim
WORKDIR /srv/forgetmap
COPY . .
RUN pip install --no-cache-dir -e .
EXPOSE 8000
