"""The VPC the stack's EKS cluster lives in: private subnets in every AZ, NAT egress, an S3 gateway endpoint
so that model downloads from S3 do not cross (and pay for) the NAT, and a private subnet per Local Zone GPU
pool (P6e-GB200 UltraServers live in a Dallas Local Zone). Local Zone subnets are kept apart: the EKS control
plane, the file systems' mount targets and load balancers get Availability Zone subnets only."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_aws as aws

from serving_stack.names import TypeTokens
from serving_stack.plan.pools import MAX_LOCAL_ZONE_SUBNETS, LocalZoneSubnet


@dataclass(frozen=True)
class NetworkArgs:
    cluster_name: str  # the cluster the subnets are tagged for
    region: str  # the VPC's region
    cidr: str  # the VPC CIDR
    availability_zones: Sequence[str]  # one public and one private subnet per zone
    nat_gateway_per_az: bool = True  # one NAT gateway per zone (else one for all)
    local_zone_subnets: Sequence[LocalZoneSubnet] = ()  # private subnets in Local Zones, for pools there
    tags: Mapping[str, str] = field(default_factory=dict)  # tags on every AWS resource it creates


def subnet_cidrs(cidr: str, zones: int) -> tuple[list[str], list[str]]:
    """Private subnets take a quarter of the VPC each (pods get VPC addresses); public subnets share the
    last quarter in 1/64ths (they hold only NAT gateways and load balancers)."""
    quarters = list(ipaddress.IPv4Network(cidr).subnets(prefixlen_diff=2))
    public = list(quarters[3].subnets(prefixlen_diff=4))
    return [str(q) for q in quarters[:zones]], [str(p) for p in public[:zones]]


def local_zone_cidrs(cidr: str, count: int) -> list[str]:
    """Local Zone subnets take the upper half of the public quarter's 1/64ths (a /22 of a /16: 1000
    addresses, a UltraServer's 18 nodes with their pods), so they never overlap the AZ subnets."""
    if count > MAX_LOCAL_ZONE_SUBNETS:
        raise ValueError(f"{count} Local Zone subnets, at most {MAX_LOCAL_ZONE_SUBNETS} fit the VPC layout")
    slots = list(ipaddress.IPv4Network(cidr).subnets(prefixlen_diff=2))[3].subnets(prefixlen_diff=4)
    return [str(slot) for slot in list(slots)[16 - MAX_LOCAL_ZONE_SUBNETS :][:count]]


class Network(pulumi.ComponentResource):
    """`private_subnet_ids_by_az`: the AZ subnets (control plane, system nodes, mount targets, AZ pools);
    `local_zone_subnet_ids`: pool name -> the subnet of that Local Zone pool."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: list[pulumi.Output[str]]
    private_subnet_ids_by_az: dict[str, pulumi.Output[str]]
    local_zone_subnet_ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.NETWORK, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)
        cluster_tag = {f"kubernetes.io/cluster/{args.cluster_name}": "shared"}
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**tags, "Name": f"{args.cluster_name}-vpc"},
            opts=child,
        )
        gateway = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=tags, opts=child)
        public_routes = aws.ec2.RouteTable(
            f"{name}-public-routes",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
            tags={**tags, "Name": f"{args.cluster_name}-public"},
            opts=child,
        )
        private_cidrs, public_cidrs = subnet_cidrs(args.cidr, len(args.availability_zones))
        nat_ids: list[pulumi.Output[str]] = []
        private_route_tables: list[aws.ec2.RouteTable] = []
        self.private_subnet_ids_by_az = {}
        for index, zone in enumerate(args.availability_zones):
            public = aws.ec2.Subnet(
                f"{name}-public-{zone}",
                vpc_id=vpc.id,
                cidr_block=public_cidrs[index],
                availability_zone=zone,
                tags={
                    **tags,
                    **cluster_tag,
                    "Name": f"{args.cluster_name}-public-{zone}",
                    "kubernetes.io/role/elb": "1",
                },
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{zone}", subnet_id=public.id, route_table_id=public_routes.id, opts=child
            )
            if args.nat_gateway_per_az or index == 0:
                address = aws.ec2.Eip(f"{name}-nat-{zone}", domain="vpc", tags=tags, opts=child)
                nat = aws.ec2.NatGateway(
                    f"{name}-nat-{zone}",
                    allocation_id=address.id,
                    subnet_id=public.id,
                    tags=tags,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway]),
                )
                nat_ids.append(nat.id)
            private = aws.ec2.Subnet(
                f"{name}-private-{zone}",
                vpc_id=vpc.id,
                cidr_block=private_cidrs[index],
                availability_zone=zone,
                tags={
                    **tags,
                    **cluster_tag,
                    "Name": f"{args.cluster_name}-private-{zone}",
                    "kubernetes.io/role/internal-elb": "1",
                },
                opts=child,
            )
            routes = aws.ec2.RouteTable(
                f"{name}-private-routes-{zone}",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat_ids[-1])],
                tags={**tags, "Name": f"{args.cluster_name}-private-{zone}"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-private-{zone}", subnet_id=private.id, route_table_id=routes.id, opts=child
            )
            private_route_tables.append(routes)
            self.private_subnet_ids_by_az[zone] = private.id
        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[t.id for t in private_route_tables],
            tags={**tags, "Name": f"{args.cluster_name}-s3"},
            opts=child,
        )
        cidrs = local_zone_cidrs(args.cidr, len(args.local_zone_subnets))
        self.local_zone_subnet_ids = {
            subnet.pool: self._local_zone_subnet(name, args, subnet, cidr, vpc.id, nat_ids[0])
            for subnet, cidr in zip(args.local_zone_subnets, cidrs, strict=True)
        }
        self.vpc_id = vpc.id
        self.private_subnet_ids = list(self.private_subnet_ids_by_az.values())
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "localZoneSubnetIds": self.local_zone_subnet_ids,
            }
        )

    def _local_zone_subnet(
        self,
        name: str,
        args: NetworkArgs,
        subnet: LocalZoneSubnet,
        cidr: str,
        vpc_id: pulumi.Output[str],
        nat_id: pulumi.Output[str],
    ) -> pulumi.Output[str]:
        """A private subnet in the pool's Local Zone (its zone group must be opted in first), egress through
        the first AZ's NAT gateway; no load-balancer role tags (nothing is exposed from it)."""
        child = pulumi.ResourceOptions(parent=self)
        label = f"{args.cluster_name}-{subnet.pool}-{subnet.zone}"
        private = aws.ec2.Subnet(
            f"{name}-local-{subnet.pool}",
            vpc_id=vpc_id,
            cidr_block=cidr,
            availability_zone=subnet.zone,
            tags={**args.tags, f"kubernetes.io/cluster/{args.cluster_name}": "shared", "Name": label},
            opts=child,
        )
        routes = aws.ec2.RouteTable(
            f"{name}-local-routes-{subnet.pool}",
            vpc_id=vpc_id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat_id)],
            tags={**args.tags, "Name": label},
            opts=child,
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-local-{subnet.pool}", subnet_id=private.id, route_table_id=routes.id, opts=child
        )
        subnet_id: pulumi.Output[str] = private.id
        return subnet_id
