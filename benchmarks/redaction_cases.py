"""The redaction cases: secrets that reached disk whole, and clean technical lines
that were altered. Also in tests/fixtures/redaction (positives.jsonl, clean.txt)."""

from __future__ import annotations

# name -> (text, the part that must not reach disk)
SECRET_CASES: dict[str, tuple[str, str]] = {
    "azure storage": (
        "Storage: DefaultEndpointsProtocol=https;AccountName=prodlogs;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6QUJD==;EndpointSuffix=core.windows.net",
        "Zm9vYmFyYmF6cXV4MTIz",
    ),
    "azure service bus": (
        "Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=q8W2rT5yU7iO9pA1sD3fG5hJ7kL9zX2cV4bN6mQ8wE0=",
        "q8W2rT5yU7iO9pA1",
    ),
    "azure sas": (
        "Blob SAS: https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z%2BAbC%3D",
        "Ab3dEf6hIj9kLm2n",
    ),
    "postgres url": (
        "DATABASE_URL is postgres://app:Xk29vLq7pR@db.internal:5432/orders",
        "Xk29vLq7pR",
    ),
    "mongodb srv": (
        "Mongo lives at mongodb+srv://svc:p4ssW0rdQ9@cluster0.ab1cd.mongodb.net/test",
        "p4ssW0rdQ9",
    ),
    "redis url": (
        "Cache: redis://:Rz8sK2mQw9@cache.internal:6379/0",
        "Rz8sK2mQw9",
    ),
    "jdbc password": (
        "jdbc:sqlserver://db01:1433;databaseName=erp;user=sa;password=Qw7eR9tY2u",
        "Qw7eR9tY2u",
    ),
    "odbc pwd": (
        "Driver={ODBC Driver 18};Server=tcp:sql1;Uid=app;Pwd=Lm4nB8vC2x;Encrypt=yes",
        "Lm4nB8vC2x",
    ),
    "chinese password": (
        "数据库密码是 hunter2xyz",
        "hunter2xyz",
    ),
    "chinese password colon": (
        "测试环境的口令：Tr0ub4dor9",
        "Tr0ub4dor9",
    ),
    "chinese password nospace": (
        "服务器root密码为Pa55w0rd88，别外传",
        "Pa55w0rd88",
    ),
    "chinese password sep": (
        "管理员密码: qwerty7788",
        "qwerty7788",
    ),
    "sshpass": (
        "Deploy with sshpass -p Vh3kZp9q ssh deploy@10.0.3.7",
        "Vh3kZp9q",
    ),
    "sshpass quoted": (
        "sshpass -p 'N0tS3cure!' scp dump.sql backup:",
        "N0tS3cure",
    ),
    "mysql -p glued": (
        "Run mysql -uroot -pS3cr3tDb7 orders < dump.sql",
        "S3cr3tDb7",
    ),
    "mysql -p spaced": (
        "mysqldump -u admin -p Kq8wE3rT5y shop > shop.sql",
        "Kq8wE3rT5y",
    ),
    "mysql --password=": (
        "mysql --password=Zx9cV7bN5m -h db1",
        "Zx9cV7bN5m",
    ),
    "PGPASSWORD": (
        "PGPASSWORD=Wq3eR5tY7u psql -h db -U app",
        "Wq3eR5tY7u",
    ),
    "export PGPASSWORD": (
        "export PGPASSWORD='Hj6kL8zX0c'",
        "Hj6kL8zX0c",
    ),
    "MYSQL_PWD": (
        "MYSQL_PWD=Bn5mQ7wE9r mysql -u app",
        "Bn5mQ7wE9r",
    ),
    "docker login -p": (
        "docker login -u ci -p Dk7rP2sW9x registry.example.com",
        "Dk7rP2sW9x",
    ),
    "curl -u": (
        "curl -u admin:Cu8rL3pW6z https://api.internal/health",
        "Cu8rL3pW6z",
    ),
    "amqp url": (
        "amqp://guest:Rb4tM9qZ2w@rabbit:5672/",
        "Rb4tM9qZ2w",
    ),
}
CLEAN_LINES: list[str] = [
    "The pod CIDR is 10.244.0.0/16 and services use 10.96.0.0/12.",
    "Docs use the IPv6 documentation prefix 2001:db8::/32 for examples.",
    "Upgrade to version 1.2.3.4 of the agent.",
    "Bumped requests from 2.31.0 to 2.32.3.",
    "Set -p 8080 to publish the port with docker run -p 8080:80 nginx.",
    "Use mysql -p to be prompted for the password.",
    "Run pip install -r requirements.txt -p 3.11",
    "The VPC range 172.16.0.0/12 is reserved.",
    "The password policy requires 12 characters.",
    "密码长度至少 12 位。",
    "Run `ssh -p 2222 deploy@bastion` to reach the box.",
    "Connection string format: Server=myServer;Database=myDB;User Id=myUser;Password=<password>;",
    "Use postgres://user:${DB_PASSWORD}@db:5432/app in the template.",
    'sshpass -p "$SSHPASS" ssh host',
    "PGPASSWORD=$PGPASSWORD psql -h db",
    "Kubernetes service CIDR 10.96.0.0/12 and node range 10.240.0.0/16.",
    "Use fd00::/8 for unique local addresses.",
    "python 3.11.4 and node 20.10.0",
]
